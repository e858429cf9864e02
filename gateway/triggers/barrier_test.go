package triggers

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestBarrierTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _, e := newBubbleEngine(t, nil)
		h.text("create_ticket", "{}")
		gate := make(chan struct{})
		h.tool("slow", func(context.Context, string, map[string]any) (string, bool, error) {
			<-gate
			return "ok", false, nil
		})
		register(t, e,
			`{"id":"short","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"provoking_call","timeout_seconds":10},"actions":[{"type":"tool","tool":"slow"}]}`,
			`{"id":"nobarrier","when":{"type":"action","tool":"create_ticket"},"actions":[{"type":"tool","tool":"slow"}]}`)
		start := time.Now()
		b := e.AfterToolCall(context.Background(), call("create_ticket", `{}`, `{}`))
		if ids := b.TriggerIDs(); len(ids) != 1 || ids[0] != "short" {
			t.Fatalf("barrier waits for %v", ids)
		}
		if !b.Wait(context.Background()) {
			t.Fatal("barrier did not time out")
		}
		if waited := time.Since(start); waited != 10*time.Second {
			t.Fatalf("held for %s, want 10s", waited)
		}
		tr := h.trajectory("trigger_barrier_timeout")
		if len(tr) != 1 || tr[0] != `{"event_type":"trigger_barrier_timeout","source":"trigger_engine","at":"provoking_call","trigger_ids":["short"],"timeout_s":10}` {
			t.Fatalf("trajectory %v", tr)
		}
		if s := statusOf(e, "short"); s.Status != "firing" {
			t.Fatalf("the fire should keep running: %+v", s)
		}
		close(gate)
		synctest.Wait()
		if s := statusOf(e, "short"); s.Status != "fired" || s.FireCount != 1 {
			t.Fatalf("%+v", s)
		}
	})
}

func TestBarrierTakesLargestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _, e := newBubbleEngine(t, nil)
		h.text("create_ticket", "{}")
		gate := make(chan struct{})
		defer close(gate)
		h.tool("slow", func(context.Context, string, map[string]any) (string, bool, error) {
			<-gate
			return "ok", false, nil
		})
		register(t, e,
			`{"id":"a","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"provoking_call","timeout_seconds":10},"actions":[{"type":"tool","tool":"slow"}]}`,
			`{"id":"b","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"provoking_call"},"actions":[{"type":"tool","tool":"slow"}]}`)
		start := time.Now()
		e.AfterToolCall(context.Background(), call("create_ticket", `{}`, `{}`)).Wait(context.Background())
		if waited := time.Since(start); waited != DefaultBarrierTimeout {
			t.Fatalf("held for %s, want the default 30s (the largest)", waited)
		}
		if tr := h.trajectory("trigger_barrier_timeout"); len(tr) != 1 || tr[0] != `{"event_type":"trigger_barrier_timeout","source":"trigger_engine","at":"provoking_call","trigger_ids":["a","b"],"timeout_s":30}` {
			t.Fatalf("trajectory %v", tr)
		}
	})
}

func TestFireThatPanicsUnwedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _, e := newBubbleEngine(t, nil)
		h.text("create_ticket", "{}")
		h.tool("bad", func(context.Context, string, map[string]any) (string, bool, error) { panic("host bug") })
		register(t, e, `{"id":"p","when":{"type":"action","tool":"create_ticket","repeat":true},"actions":[{"type":"tool","tool":"bad"}]}`)
		e.AfterToolCall(context.Background(), call("create_ticket", `{}`, `{}`))
		synctest.Wait()
		f := eventsOf(e, "failed")
		if s := statusOf(e, "p"); s.Status != "armed" || len(f) != 1 || f[0]["detail"] != "firing did not settle" || f[0]["dropped"] != float64(0) {
			t.Fatalf("status %+v failed %v", s, f)
		}
	})
}
