package triggers

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/agentenv/agentenv/gateway/vclock"
)

func newBubbleEngine(t *testing.T, opts *Options) (*testHost, *vclock.Virtual, *Engine) {
	h := newTestHost()
	clk := vclock.New(nil)
	e := New(h, clk, opts)
	t.Cleanup(e.Close)
	return h, clk, e
}

func TestStateTriggerBindAndVerify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _, e := newBubbleEngine(t, nil)
		var count atomic.Int64
		h.text("list_folders", `{"folders":[{"name":"sent","id":"f1"},{"name":"inbox","id":"f2"}]}`)
		h.tool("count_emails", func(_ context.Context, as string, args map[string]any) (string, bool, error) {
			if as != "" {
				t.Errorf("state probe stamped with role %q", as)
			}
			if args["folder"] != "f2" {
				t.Errorf("binding not substituted: %v", args)
			}
			return `{"count":` + itoa(count.Load()) + `}`, false, nil
		})
		h.tool("receive_email", func(context.Context, string, map[string]any) (string, bool, error) {
			count.Add(5)
			return "ok", false, nil
		})
		h.text("peek", "{}")
		h.readOnly["peek"] = true
		h.text("archive", "ok")
		h.text("archived", `{"archived":true}`)
		mustRegister(t, e, `{"triggers":[{"id":"inbox-full","when":{"type":"state","check":{"steps":[
		    {"tool":"list_folders","extract":{"path":"folders","match":{"name":{"equals":"inbox"}},"take":"id"},"bind":"folder"},
		    {"tool":"count_emails","args":{"folder":"${folder}"},"extract":"count","predicate":{"regex":"^[1-9][0-9]+$"}}]}},
		  "actions":[{"type":"permission","action":"disable","role":"default","tools":["send_email"]},
		             {"type":"tool","tool":"archive","args":{"folder":"all"},"verify":{"tool":"archived","extract":"archived","predicate":{"equals":true}}}]}]}`)
		ctx := context.Background()
		e.AfterToolCall(ctx, call("receive_email", `{}`, "ok")) // 0 emails at probe time
		synctest.Wait()
		if st := statusOf(e, "inbox-full"); st.Status != "armed" || st.FireCount != 0 {
			t.Fatalf("fired too early: %+v", st)
		}
		count.Store(12)
		e.AfterToolCall(ctx, call("peek", `{}`, "{}")) // read-only: no evaluation
		synctest.Wait()
		if n := len(h.callsTo("count_emails")); n != 1 {
			t.Fatalf("read-only call evaluated the state trigger (%d probes)", n)
		}
		e.AfterToolCall(ctx, call("receive_email", `{}`, "ok"))
		synctest.Wait()
		st := statusOf(e, "inbox-full")
		if st.Status != "fired" || st.FireCount != 1 {
			t.Fatalf("state trigger did not fire: %+v", st)
		}
		if len(h.rules) != 1 || h.rules[0] != "default [send_email] true" {
			t.Fatalf("rules %v", h.rules)
		}
		if len(eventsOf(e, "verify_ok")) != 1 {
			t.Fatal("verify not run")
		}
		if len(h.trajectory("trigger_fired")) != 0 {
			t.Fatal("trigger_fired written for a state trigger")
		}
		// One-shot: no more evaluations.
		e.AfterToolCall(ctx, call("receive_email", `{}`, "ok"))
		synctest.Wait()
		if n := len(h.callsTo("count_emails")); n != 2 {
			t.Fatalf("fired state trigger still probing (%d)", n)
		}
	})
}

func TestStateEvaluationCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _, e := newBubbleEngine(t, nil)
		gate := make(chan struct{})
		h.tool("probe", func(ctx context.Context, _ string, _ map[string]any) (string, bool, error) {
			<-gate
			return `{"n":0}`, false, nil
		})
		h.text("write", "ok")
		mustRegister(t, e, `{"triggers":[{"id":"s","when":{"type":"state","check":{"tool":"probe","extract":"n","predicate":{"equals":1}}},"actions":[]}]}`)
		for range 5 {
			e.AfterToolCall(context.Background(), call("write", `{}`, "ok"))
		}
		synctest.Wait()
		close(gate)
		synctest.Wait()
		if n := len(h.callsTo("probe")); n != 2 {
			t.Fatalf("5 calls during a running probe gave %d probes, want 2 (one running + one pending)", n)
		}
	})
}

func TestStateEvalErrorStaysArmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _, e := newBubbleEngine(t, nil)
		h.text("write", "ok")
		h.discovered = false // the probe's tool is unknown until later
		mustRegister(t, e, `{"triggers":[{"id":"s","when":{"type":"state","check":{"tool":"ghost","predicate":{"exists":true}}},"actions":[]}]}`)
		e.AfterToolCall(context.Background(), call("write", `{}`, "ok"))
		synctest.Wait()
		st := statusOf(e, "s")
		ev := eventsOf(e, "eval_error")
		if st.Status != "armed" || st.FailureCount != 1 || len(ev) != 1 || ev[0]["detail"] != "check step ghost: unknown tool 'ghost'" {
			t.Fatalf("status %+v events %v", st, ev)
		}
	})
}

func itoa(n int64) string {
	return string(mustMarshal(n))
}
