package triggers

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/gateway/vclock"
)

// BenchmarkTimeTriggerPrecision measures, with the real clock, how late a
// time trigger's action runs after the real instant its virtual mark is
// due, at rate 3600 with a mark every virtual minute (one per 16.7 ms of
// real time). One iteration is one mark. It reports p50/p99/max lateness
// beside a plain Go timer's, run alongside on the same schedule, so both
// see the same machine. Its bound is a ratio of the two medians: a stall
// of the machine delays both and fails nothing; a regression of the
// engine's scheduling shows against the timer.
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
	// The floor: a plain timer on the same real schedule, at the same time.
	period := time.Minute / 3600
	plain := make([]time.Duration, 0, n)
	plainDone := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(plainDone)
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for i := 1; i <= n; i++ {
			due := start.Add(time.Duration(i) * period)
			timer.Reset(time.Until(due))
			<-timer.C
			plain = append(plain, time.Since(due))
		}
	}()
	b.ResetTimer()
	lateness := make([]time.Duration, 0, n)
	for i := 1; i <= n; i++ {
		c := <-calls
		due, _ := clk.RealInstant(t0.Add(time.Duration(i) * time.Minute))
		lateness = append(lateness, c.At.Sub(due))
	}
	b.StopTimer()
	<-plainDone
	slices.Sort(lateness)
	slices.Sort(plain)
	q := func(d []time.Duration, p float64) time.Duration { return d[int(p*float64(len(d)-1))] }
	b.ReportMetric(float64(q(lateness, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(q(lateness, 0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(slices.Max(lateness).Microseconds()), "max-µs")
	b.ReportMetric(float64(slices.Min(lateness).Microseconds()), "min-µs")
	b.ReportMetric(float64(q(plain, 0.5).Microseconds()), "timer-p50-µs")
	b.ReportMetric(float64(q(plain, 0.99).Microseconds()), "timer-p99-µs")
	if best := slices.Min(lateness); best < 0 {
		b.Fatalf("a mark fired %s early", -best)
	}
	// The engine adds a goroutine hand-off and a host call to the timer;
	// 10× the timer's median (not less than 10× 50 µs, so a timer that
	// happens to be exact does not make the bound zero) catches a real
	// regression and no stall.
	if got, floor := q(lateness, 0.5), max(q(plain, 0.5), 50*time.Microsecond); got > 10*floor {
		b.Fatalf("median lateness %s, over 10× a plain timer's (%s) in the same run", got, q(plain, 0.5))
	}
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
