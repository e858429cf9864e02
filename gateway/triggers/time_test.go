package triggers

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentenv/agentenv/gateway/vclock"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func timeTrigger(id, when string) string {
	return `{"id":"` + id + `","when":{"type":"time",` + when + `},"actions":[{"type":"tool","tool":"tick","args":{"id":"` + id + `"}}]}`
}

func register(t *testing.T, e *Engine, triggers ...string) {
	t.Helper()
	mustRegister(t, e, `{"triggers":[`+strings.Join(triggers, ",")+`]}`)
}

func firedMarks(e *Engine, id string) []string {
	var out []string
	for _, ev := range eventsOf(e, "fired") {
		if ev["trigger_id"] == id {
			out = append(out, ev["mark"].(string))
		}
	}
	return out
}

func TestDriverFiresAtWithZeroCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, clk, e := newBubbleEngine(t, nil)
		h.text("tick", "ok")
		e.Start()
		e.Start() // idempotent
		register(t, e, timeTrigger("rel", `"at":"PT2H"`), timeTrigger("abs", `"at":"2026-03-01T12:00:00Z"`))
		time.Sleep(time.Hour) // unarmed clock: nothing is due, nothing is read
		synctest.Wait()
		if h.numCalls() != 0 {
			t.Fatal("fired on an unarmed clock")
		}
		st, _ := clk.Arm(t0, 3600)
		time.Sleep(2*time.Second - time.Nanosecond)
		synctest.Wait()
		if h.numCalls() != 0 {
			t.Fatal("fired before the mark")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		calls := h.callsTo("tick")
		if len(calls) != 1 || calls[0].Args["id"] != "rel" || calls[0].At.Sub(st.Anchor) != 2*time.Second {
			t.Fatalf("calls %+v", calls)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if calls = h.callsTo("tick"); len(calls) != 2 || calls[1].Args["id"] != "abs" || calls[1].At.Sub(st.Anchor) != 3*time.Second {
			t.Fatalf("calls %+v", calls)
		}
		for _, id := range []string{"rel", "abs"} {
			if s := statusOf(e, id); s.Status != "fired" || s.FireCount != 1 || s.NextMark != nil {
				t.Fatalf("%s: %+v", id, s)
			}
		}
		det := eventsOf(e, "detected")
		if len(det) != 2 || det[0]["first_mark"] != "2026-03-01T11:00:00Z" || det[0]["due"] != float64(1) {
			t.Fatalf("detected %v", det)
		}
		if p := det[0]["provoking"].(map[string]any); p["source"] != "clock" {
			t.Fatalf("provoking %v", p)
		}
		e.Stop()
		e.Stop()
		e.Start() // can start again
	})
}

func TestEveryCountUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, clk, e := newBubbleEngine(t, nil)
		h.text("tick", "ok")
		clk.Arm(t0, 3600)
		e.Start()
		register(t, e,
			timeTrigger("count", `"every":"PT1H","count":3`),
			timeTrigger("until", `"every":"PT1H","until":"PT2H30M"`),
			timeTrigger("forever", `"every":"PT45M"`))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := strings.Join(firedMarks(e, "count"), " "); got != "2026-03-01T10:00:00Z 2026-03-01T11:00:00Z 2026-03-01T12:00:00Z" {
			t.Fatalf("count marks %s", got)
		}
		if got := strings.Join(firedMarks(e, "until"), " "); got != "2026-03-01T10:00:00Z 2026-03-01T11:00:00Z" {
			t.Fatalf("until marks %s", got)
		}
		if n := len(firedMarks(e, "forever")); n != 13 { // 10 h / 45 min
			t.Fatalf("forever fired %d times", n)
		}
		for _, id := range []string{"count", "until"} {
			if s := statusOf(e, id); s.Status != "fired" || s.NextMark != nil {
				t.Fatalf("%s: %+v", id, s)
			}
		}
		if s := statusOf(e, "forever"); s.Status != "armed" || s.NextMark == nil || *s.NextMark != "2026-03-01T19:30:00Z" {
			t.Fatalf("forever: %+v", s)
		}
	})
}

func TestCatchUpOnWatchedCallAndCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, clk, e := newBubbleEngine(t, nil)
		h.text("tick", "ok")
		h.text("work", "ok")
		clk.Arm(t0, 3600)
		register(t, e, timeTrigger("hourly", `"every":"PT1H"`))
		time.Sleep(3500 * time.Millisecond)                                                           // no driver: only calls evaluate
		e.AfterToolCall(context.Background(), ToolCall{Role: "default", Tool: "work", IsError: true}) // errored calls still tick
		synctest.Wait()
		det := eventsOf(e, "detected")
		if len(det) != 1 || det[0]["due"] != float64(3) || det[0]["capped"] != false ||
			det[0]["first_mark"] != "2026-03-01T10:00:00Z" || det[0]["last_mark"] != "2026-03-01T12:00:00Z" {
			t.Fatalf("catch-up %v", det)
		}
		if n := len(h.callsTo("tick")); n != 3 {
			t.Fatalf("%d actions for 3 marks", n)
		}
		e.Clear()

		clk.Arm(t0, 3600) // marks count from t0: start a fresh timeline
		register(t, e, timeTrigger("fast", `"every":"PT1S"`))
		time.Sleep(600 * time.Millisecond) // 2160 marks due
		for range 2 {
			e.AfterToolCall(context.Background(), call("work", `{}`, "ok"))
			synctest.Wait()
		}
		det = eventsOf(e, "detected")
		if len(det) != 2 || det[0]["due"] != float64(1000) || det[0]["capped"] != true || det[1]["due"] != float64(1000) {
			t.Fatalf("cap: %d detections %v", len(det), det[0])
		}
		if s := statusOf(e, "fast"); s.FireCount != 2000 || *s.NextMark != "2026-03-01T09:33:21Z" {
			t.Fatalf("after two capped evaluations: %+v", s)
		}
		e.Start() // the driver drains the rest of the backlog by itself
		synctest.Wait()
		if s := statusOf(e, "fast"); s.FireCount != 2160 || *s.NextMark != "2026-03-01T09:36:01Z" {
			t.Fatalf("backlog not drained: %+v", s)
		}
	})
}

// CPython 3.11: random.Random(7) with expovariate(1/7200) from
// 09:00:00 gives 09:46:57.466878, 10:06:34.799768, 12:12:52.768218.
func TestSeededIntervalsReproducibleAcrossRates(t *testing.T) {
	run := func(rate float64) []string {
		var marks []string
		synctest.Test(t, func(t *testing.T) {
			h, clk, e := newBubbleEngine(t, nil)
			h.text("tick", "ok")
			clk.Arm(t0, rate)
			e.Start()
			register(t, e, timeTrigger("storm", `"every":{"dist":"exp","mean":"PT2H"},"seed":7,"count":5`))
			synctest.Wait()
			if s := statusOf(e, "storm"); *s.NextMark != "2026-03-01T09:46:57.466878Z" || string(s.When) != `{"type":"time","every":{"dist":"exp","mean":"PT2H"},"count":5,"seed":7}` {
				t.Fatalf("first mark %+v when %s", s, s.When)
			}
			time.Sleep(time.Duration(86400 / rate * float64(time.Second)))
			synctest.Wait()
			marks = firedMarks(e, "storm")
			if s := statusOf(e, "storm"); s.Status != "fired" || s.FireCount != 5 {
				t.Fatalf("rate %v: %+v", rate, s)
			}
		})
		return marks
	}
	a, b := run(3600), run(86400)
	if len(a) != 5 || strings.Join(a, " ") != strings.Join(b, " ") {
		t.Fatalf("schedules differ:\n%v\n%v", a, b)
	}
	if a[0] != "2026-03-01T09:46:57.466878Z" || a[1] != "2026-03-01T10:06:34.799768Z" {
		t.Fatalf("not the reference's stream: %v", a)
	}
}

func TestReanchorOnRearm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, clk, e := newBubbleEngine(t, nil)
		h.text("tick", "ok")
		clk.Arm(t0, 1)
		e.Start()
		register(t, e, timeTrigger("hourly", `"every":"PT1H"`), timeTrigger("exp", `"every":{"dist":"exp","mean":"PT2H"},"seed":7`))
		synctest.Wait()
		if s := statusOf(e, "hourly"); *s.NextMark != "2026-03-01T10:00:00Z" {
			t.Fatalf("%+v", s)
		}
		jump := t0.Add(24 * time.Hour)
		clk.Arm(jump, 1)
		synctest.Wait()
		re := eventsOf(e, "reanchored")
		if len(re) != 2 || re[0]["dropped_mark"] != "2026-03-01T10:00:00Z" || re[0]["generation"] != float64(2) {
			t.Fatalf("reanchored %v", re)
		}
		if s := statusOf(e, "hourly"); *s.NextMark != "2026-03-02T10:00:00Z" {
			t.Fatalf("hourly after re-arm %+v", s)
		}
		// The generator is re-seeded: the same first interval from the new t0.
		if s := statusOf(e, "exp"); *s.NextMark != "2026-03-02T09:46:57.466878Z" {
			t.Fatalf("exp after re-arm %+v", s)
		}
		// Pause = re-arm with rate 0: nothing fires however long we wait.
		clk.Arm(jump, 0)
		time.Sleep(48 * time.Hour)
		synctest.Wait()
		if h.numCalls() != 0 {
			t.Fatal("fired on a frozen clock")
		}
	})
}

func TestAfterOffsetAndMissingAnchor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, clk, e := newBubbleEngine(t, nil)
		h.text("tick", "ok")
		clk.Arm(t0, 60)
		e.Start()
		register(t, e,
			timeTrigger("anchor", `"at":"PT1H"`),
			timeTrigger("dep", `"after":"anchor","offset":"PT30M"`),
			timeTrigger("orphan", `"after":"nobody","offset":"PT1M"`))
		time.Sleep(time.Hour)
		synctest.Wait()
		an := eventsOf(e, "anchored")
		if len(an) != 1 || an[0]["trigger_id"] != "dep" || an[0]["anchor"] != "anchor" || an[0]["mark"] != "2026-03-01T10:30:00Z" {
			t.Fatalf("anchored %v", an)
		}
		if got := firedMarks(e, "dep"); len(got) != 1 || got[0] != "2026-03-01T10:30:00Z" {
			t.Fatalf("dep fired %v", got)
		}
		if s := statusOf(e, "orphan"); s.Status != "armed" || s.FireCount != 0 || s.NextMark != nil {
			t.Fatalf("orphan %+v", s)
		}
	})
}

func TestPastAtFiresOnArmAndFailureIsTerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, clk, e := newBubbleEngine(t, nil)
		h.tool("tick", func(context.Context, string, map[string]any) (string, bool, error) { return "boom", true, nil })
		e.Start()
		register(t, e, timeTrigger("past", `"every":"PT1H","at":"2020-01-01T00:00:00Z","count":2`))
		synctest.Wait()
		clk.Arm(t0, 1)
		synctest.Wait()
		s := statusOf(e, "past")
		if h.numCalls() != 1 || s.Status != "failed" || s.NextMark != nil || s.FailureCount != 1 {
			t.Fatalf("calls %d status %+v", h.numCalls(), s)
		}
	})
}

func TestCronEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, clk, e := newBubbleEngine(t, nil)
		h.text("tick", "ok")
		clk.Arm(time.Date(2026, 3, 6, 16, 50, 0, 0, time.UTC), 3600) // a Friday
		e.Start()
		register(t, e, timeTrigger("cron", `"every":"*/15 9-17 * * MON-FRI","count":4`))
		time.Sleep(time.Hour)
		synctest.Wait()
		got := strings.Join(firedMarks(e, "cron"), " ")
		if got != "2026-03-06T17:00:00Z 2026-03-06T17:15:00Z 2026-03-06T17:30:00Z 2026-03-06T17:45:00Z" {
			t.Fatalf("cron marks %s", got)
		}
		_ = vclock.MaxInstant
	})
}

func TestSaturatedMarkRetires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, clk, e := newBubbleEngine(t, nil)
		h.text("tick", "ok")
		clk.Arm(vclock.MaxInstant.Add(-86400*2*time.Second), 2)
		e.Start()
		register(t, e, timeTrigger("w", `"every":"P1D"`))
		time.Sleep(2 * 86400 * time.Second)
		synctest.Wait()
		if s := statusOf(e, "w"); s.Status != "fired" || s.NextMark != nil {
			t.Fatalf("%+v", s)
		}
	})
}
