package triggers

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/gateway/vclock"
)

// BenchmarkTimeTriggerPrecision measures, with the real clock, how late a
// time trigger's action runs after the real instant its virtual mark is
// due, at rate 3600 with a mark every virtual minute (one per 16.7 ms of
// real time). One iteration is one mark. It reports p50/p99/max lateness;
// the bound (500 ms) is loose on purpose so CI noise cannot fail it.
func BenchmarkTimeTriggerPrecision(b *testing.B) {
	h := newTestHost()
	calls := make(chan hostCall, 1024)
	h.callNotify = calls
	h.text("tick", "ok")
	clk := vclock.New(nil)
	e := New(h, clk, nil)
	defer e.Close()
	e.Start()
	if _, err := clk.Arm(t0, 3600); err != nil {
		b.Fatal(err)
	}
	n := b.N
	if _, err := e.Register(context.Background(), []byte(`{"triggers":[{"id":"m","when":{"type":"time","every":"PT1M","count":`+strconv.Itoa(n)+`},"actions":[{"type":"tool","tool":"tick"}]}]}`)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	lateness := make([]time.Duration, 0, n)
	for i := 1; i <= n; i++ {
		c := <-calls
		due, _ := clk.RealInstant(t0.Add(time.Duration(i) * time.Minute))
		lateness = append(lateness, c.At.Sub(due))
	}
	b.StopTimer()
	sort.Slice(lateness, func(i, j int) bool { return lateness[i] < lateness[j] })
	q := func(p float64) time.Duration { return lateness[int(p*float64(len(lateness)-1))] }
	b.ReportMetric(float64(q(0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(q(0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(slices.Max(lateness).Microseconds()), "max-µs")
	b.ReportMetric(float64(slices.Min(lateness).Microseconds()), "min-µs")
	if worst := slices.Max(lateness); worst > 500*time.Millisecond {
		b.Fatalf("a mark fired %s late", worst)
	}
	if best := slices.Min(lateness); best < 0 {
		b.Fatalf("a mark fired %s early", -best)
	}
	_ = fmt.Sprint
}

// BenchmarkAfterToolCall is the engine's cost on the call path of every
// /mcp and /step call.
func BenchmarkAfterToolCall(b *testing.B) {
	c := call("list_emails", `{"folder":"inbox","limit":20}`, `[{"id":"e1","subject":"hello"}]`)
	run := func(b *testing.B, body string) {
		h := newTestHost()
		h.discovered = false
		e := New(h, vclock.New(nil), nil)
		defer e.Close()
		if body != "" {
			if _, err := e.Register(context.Background(), []byte(body)); err != nil {
				b.Fatal(err)
			}
		}
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			e.AfterToolCall(ctx, c).Wait(ctx)
		}
	}
	var tenOthers []string
	for i := range 10 {
		tenOthers = append(tenOthers, `{"id":"o`+strconv.Itoa(i)+`","when":{"type":"action","tool":"other"},"actions":[]}`)
	}
	b.Run("no-triggers", func(b *testing.B) { run(b, "") })
	b.Run("10-other-tools", func(b *testing.B) { run(b, `{"triggers":[`+strings.Join(tenOthers, ",")+`]}`) })
	b.Run("matching-tool-where-false", func(b *testing.B) {
		run(b, `{"triggers":[{"id":"w","when":{"type":"action","tool":"list_emails","where":{"folder":{"equals":"spam"}}},"actions":[]}]}`)
	})
}
