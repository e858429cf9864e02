package triggers

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

const mirrorCreate = `{"watch_roles":["default","agent"],
 "executor":{"a2a_url":"http://127.0.0.1:1","role":"executor"},
 "triggers":[{"id":"mirror-create",
   "when":{"type":"action","tool":"create_ticket","where":{"priority":{"equals":"high"},"result.id":{"regex":"^T-"}},"repeat":true},
   "barrier":{"at":"provoking_call","timeout_seconds":10},
   "actions":[{"type":"tool","tool":"notify","args":{"ticket":"${result.id}","title":"${args.title}","note":"ticket ${result.id} (${args.tags}) ${result.missing?}","maybe":"${result.missing?}"},"as":"system",
     "verify":{"steps":[{"tool":"get_notification","args":{"ticket":"${result.id}"},"extract":"status","predicate":{"equals":"sent"}}]}}]}]}`

func TestActionTriggerWhereTemplatingVerifyBarrier(t *testing.T) {
	f := newFixture(t, nil)
	f.host.text("create_ticket", "{}")
	var mu sync.Mutex
	sent := map[string]bool{}
	f.host.tool("notify", func(_ context.Context, as string, args map[string]any) (string, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		sent[args["ticket"].(string)] = true
		return "ok", false, nil
	})
	f.host.tool("get_notification", func(_ context.Context, as string, args map[string]any) (string, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if sent[args["ticket"].(string)] {
			return `{"status":"sent"}`, false, nil
		}
		return `{"status":"pending"}`, false, nil
	})
	if code, m := f.post(t, "/triggers/register", mirrorCreate); code != 200 {
		t.Fatalf("%d %v", code, m)
	}
	ctx := context.Background()
	// Not matching: low priority, unwatched role, executor role, errored call.
	f.eng.AfterToolCall(ctx, call("create_ticket", `{"title":"x","priority":"low"}`, `{"id":"T-0"}`)).Wait(ctx)
	c := call("create_ticket", `{"title":"x","priority":"high"}`, `{"id":"T-0"}`)
	c.Role = "stranger"
	if b := f.eng.AfterToolCall(ctx, c); b != nil {
		t.Fatal("unwatched role fired")
	}
	c.Role = "executor"
	if b := f.eng.AfterToolCall(ctx, c); b != nil {
		t.Fatal("executor traffic fired")
	}
	c.Role, c.IsError = "default", true
	if b := f.eng.AfterToolCall(ctx, c); b != nil {
		t.Fatal("errored call fired")
	}
	if n := len(f.host.callsTo("notify")); n != 0 {
		t.Fatalf("%d notify calls from non-matching calls", n)
	}

	b := f.eng.AfterToolCall(ctx, call("create_ticket", `{"title":"Printer down","priority":"high","tags":["hw",2]}`, `{"id":"T-1"}`))
	if got := b.TriggerIDs(); len(got) != 1 || got[0] != "mirror-create" {
		t.Fatalf("barrier ids %v", got)
	}
	if b.Wait(ctx) {
		t.Fatal("barrier timed out")
	}
	// The barrier held the answer until the fire settled: everything is
	// visible now, without waiting.
	calls := f.host.callsTo("notify")
	if len(calls) != 1 {
		t.Fatalf("notify calls %v", calls)
	}
	args, _ := json.Marshal(calls[0].Args)
	if want := `{"note":"ticket T-1 ([\"hw\", 2]) ","ticket":"T-1","title":"Printer down"}`; string(args) != want || calls[0].As != "system" {
		t.Fatalf("notify got %s as %q, want %s as system", args, calls[0].As, want)
	}
	if v := f.host.callsTo("get_notification"); len(v) != 1 || v[0].As != "system" || v[0].Args["ticket"] != "T-1" {
		t.Fatalf("verify calls %v", v)
	}
	st := statusOf(f.eng, "mirror-create")
	if st.Status != "armed" || st.FireCount != 1 || st.FailureCount != 0 || st.FiredAt == nil || st.DetectedAt == nil {
		t.Fatalf("status %+v", st)
	}
	if string(st.When) != `{"type":"action","tool":"create_ticket","repeat":true}` || string(st.Barrier) != `{"at":"provoking_call","timeout_seconds":10}` {
		t.Fatalf("echo when=%s barrier=%s", st.When, st.Barrier)
	}
	var kinds []string
	for _, ev := range eventsOf(f.eng, "") {
		kinds = append(kinds, ev["kind"].(string))
	}
	if got := strings.Join(kinds, ","); got != "added,detected,verify_ok,action_ok,fired" {
		t.Fatalf("events %s", got)
	}
	det := eventsOf(f.eng, "detected")[0]
	if p, _ := json.Marshal(det["provoking"]); string(p) != `{"role":"default","tool":"create_ticket"}` {
		t.Fatalf("provoking %s", p)
	}
	ok := eventsOf(f.eng, "action_ok")[0]
	if d, _ := json.Marshal(ok["detail"]); !strings.Contains(string(d), `"as":"system"`) || !strings.Contains(string(d), `"ticket":{"redacted":{"len":3,"type":"str"}}`) || !strings.Contains(string(d), `"title":"Printer down"`) {
		t.Fatalf("action_ok detail %s", d)
	}
	if ok["changelog_id_before"] == nil || ok["changelog_id_after"] == nil {
		t.Fatalf("changelog ids missing: %v", ok)
	}
	tf := f.host.trajectory("trigger_fired")
	if len(tf) != 1 || tf[0] != `{"event_type":"trigger_fired","source":"trigger_engine","trigger_id":"mirror-create","provoking_tool":"create_ticket"}` {
		t.Fatalf("trigger_fired %v", tf)
	}
	itc := f.host.trajectory("internal_tool_call")
	if len(itc) != 1 || !strings.Contains(itc[0], `"tool":"notify","arguments":{"note":{"redacted":{"len":23,"type":"str"}},"ticket":{"redacted":{"len":3,"type":"str"}},"title":"Printer down"},"as":"system","ok":true,"result_len":2,"result_sha256":"2689367b205c16ce"`) {
		t.Fatalf("internal_tool_call %v", itc)
	}
}

func TestRepeatQueuesAndBarrierScopedToItsCall(t *testing.T) {
	f := newFixture(t, nil)
	f.host.text("create_ticket", "{}")
	gates := map[string]chan struct{}{"T-1": make(chan struct{}), "T-2": make(chan struct{})}
	started := make(chan string, 2)
	f.host.tool("notify", func(ctx context.Context, _ string, args map[string]any) (string, bool, error) {
		id := args["ticket"].(string)
		started <- id
		<-gates[id]
		return "ok", false, nil
	})
	mustRegister(t, f.eng, `{"triggers":[{"id":"m","when":{"type":"action","tool":"create_ticket","repeat":true},"barrier":{"at":"provoking_call"},
	  "actions":[{"type":"tool","tool":"notify","args":{"ticket":"${result.id}"}}]}]}`)
	ctx := context.Background()
	b1 := f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `{"id":"T-1"}`))
	if <-started != "T-1" {
		t.Fatal("first fire did not start")
	}
	b2 := f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `{"id":"T-2"}`))
	if st := statusOf(f.eng, "m"); st.Status != "queued" || st.Pending != 1 {
		t.Fatalf("second call not queued: %+v", st)
	}
	if q := eventsOf(f.eng, "detected"); len(q) != 2 || q[1]["queued"] != float64(1) {
		t.Fatalf("detected events %v", q)
	}
	close(gates["T-1"])
	b1.Wait(ctx) // returns although T-2's fire has not run
	if <-started != "T-2" {
		t.Fatal("queued call not drained")
	}
	if st := statusOf(f.eng, "m"); st.FireCount != 1 || st.Status != "firing" {
		t.Fatalf("after first: %+v", st)
	}
	close(gates["T-2"])
	b2.Wait(ctx)
	if st := statusOf(f.eng, "m"); st.FireCount != 2 || st.Status != "armed" || st.Pending != 0 {
		t.Fatalf("after drain: %+v", st)
	}
}

func TestOneShotSkipsWhileFiringAndFailureRearms(t *testing.T) {
	f := newFixture(t, nil)
	f.host.text("create_ticket", "{}")
	gate := make(chan struct{})
	fail := true
	f.host.tool("notify", func(ctx context.Context, _ string, args map[string]any) (string, bool, error) {
		<-gate
		if fail {
			return "quota exceeded", true, nil
		}
		return "ok", false, nil
	})
	mustRegister(t, f.eng, `{"triggers":[{"id":"once","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"provoking_call"},
	  "actions":[{"type":"tool","tool":"notify"}]}]}`)
	ctx := context.Background()
	b1 := f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `{}`))
	if b := f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `{}`)); b != nil {
		t.Fatal("one-shot accepted a call while firing")
	}
	close(gate)
	b1.Wait(ctx)
	st := statusOf(f.eng, "once")
	if st.Status != "armed" || st.FailureCount != 1 || st.FireCount != 0 || st.LastFailureAt == nil {
		t.Fatalf("failure did not re-arm with tally: %+v", st)
	}
	af := eventsOf(f.eng, "action_failed")
	if len(af) != 1 || af[0]["detail"] != "quota exceeded" || af[0]["tool"] != "notify" {
		t.Fatalf("action_failed %v", af)
	}
	if fl := eventsOf(f.eng, "failed"); len(fl) != 1 || fl[0]["action_index"] != float64(0) {
		t.Fatalf("failed %v", fl)
	}
	fail = false
	f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `{}`)).Wait(ctx)
	if st := statusOf(f.eng, "once"); st.Status != "fired" || st.FireCount != 1 || st.FailureCount != 1 {
		t.Fatalf("one-shot success: %+v", st)
	}
	if b := f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `{}`)); b != nil {
		t.Fatal("fired one-shot fired again")
	}
}

func TestUnresolvedPlaceholderSendsNothing(t *testing.T) {
	f := newFixture(t, nil)
	f.host.text("create_ticket", "{}")
	f.host.text("notify", "ok")
	mustRegister(t, f.eng, `{"triggers":[{"id":"x","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"provoking_call"},
	  "actions":[{"type":"tool","tool":"notify","args":{"id":"${result.missing}"}}]}]}`)
	ctx := context.Background()
	f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `not json`)).Wait(ctx)
	if n := len(f.host.callsTo("notify")); n != 0 {
		t.Fatalf("sent %d calls with an unresolved placeholder", n)
	}
	af := eventsOf(f.eng, "action_failed")
	if len(af) != 1 || af[0]["detail"] != "unresolved placeholder ${result.missing}" {
		t.Fatalf("action_failed %v", af)
	}
}

func TestPermissionAction(t *testing.T) {
	f := newFixture(t, nil)
	f.host.text("create_ticket", "{}")
	mustRegister(t, f.eng, `{"triggers":[{"id":"p","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"provoking_call"},
	  "actions":[{"type":"permission","action":"disable","role":"default","tools":["send_email"]},{"type":"permission","action":"enable","role":"cli","tools":"*"}]}]}`)
	ctx := context.Background()
	f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `{}`)).Wait(ctx)
	if got := strings.Join(f.host.rules, "|"); got != "default [send_email] true|cli [ALL] false" {
		t.Fatalf("rules %s", got)
	}
	ok := eventsOf(f.eng, "action_ok")
	if d, _ := json.Marshal(ok[0]["detail"]); string(d) != `{"action":"disable","role":"default","tools":["send_email"]}` {
		t.Fatalf("detail %s", d)
	}
}

func TestRemoveCancelsInFlightFire(t *testing.T) {
	f := newFixture(t, nil)
	f.host.text("create_ticket", "{}")
	started := make(chan struct{})
	f.host.tool("notify", func(ctx context.Context, _ string, _ map[string]any) (string, bool, error) {
		close(started)
		<-ctx.Done()
		return "", false, ctx.Err()
	})
	mustRegister(t, f.eng, `{"triggers":[{"id":"slow","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"provoking_call","timeout_seconds":600},
	  "actions":[{"type":"tool","tool":"notify"}]}]}`)
	ctx := context.Background()
	b := f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `{}`))
	<-started
	if code, m := f.post(t, "/triggers/remove", `{"ids":["slow"]}`); code != 200 || join(m["removed"]) != "slow" {
		t.Fatalf("%d %v", code, m)
	}
	if b.Wait(ctx) {
		t.Fatal("barrier timed out instead of being released by the removal")
	}
	f.eng.Close() // waits for the fire goroutine
	for _, ev := range eventsOf(f.eng, "") {
		if k := ev["kind"]; k == "action_failed" || k == "failed" || k == "fired" {
			t.Fatalf("removed trigger kept logging: %v", ev)
		}
	}
}
