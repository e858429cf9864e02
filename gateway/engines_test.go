package gateway

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/protocol"
)

func TestGetTimeFollowsTheClock(t *testing.T) {
	c := startChild(t, "items", nil)
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	a := tg.mcpClient(t, "")
	if slices.Contains(a.toolNames(t), "get_time") {
		t.Fatal("get_time listed while the clock is unarmed")
	}
	st, body, _ := tg.do(t, "PUT", "/clock/set-time", nil, `{"virtual_time":"2026-03-01T09:00:00Z","virtual_seconds_per_real_second":0}`)
	if st != 200 {
		t.Fatalf("set-time = %d %s", st, body)
	}
	waitFor(t, "list_changed on arming", func() bool { return a.changed.Load() >= 1 })
	names := a.toolNames(t)
	if names[len(names)-1] != "get_time" {
		t.Fatalf("get_time must come last: %v", names)
	}
	out := a.call(t, "get_time", map[string]any{})
	if out.IsError || out.text() != `{"current_time":"2026-03-01T09:00:00Z"}` {
		t.Fatalf("get_time = %+v", out)
	}
	st, body = tg.post(t, "/step", nil, `{"action":"call_tool","tool_name":"get_time"}`)
	if st != 200 || !strings.Contains(string(body), `{\"current_time\":\"2026-03-01T09:00:00Z\"}`) {
		t.Fatalf("/step get_time = %d %s", st, body)
	}
	_, state := tg.get(t, "/state", nil)
	if !strings.Contains(string(state), `{"name":"gateway","tools":[{"name":"get_time"`) ||
		!strings.Contains(string(state), `"annotations":{"readOnlyHint":true}`) {
		t.Fatalf("/state while armed: %s", state)
	}
	// Trajectory events carry virtual_time while armed; get_time is logged once per call.
	_, traj, _ := tg.do(t, "GET", "/trajectory", nil, "")
	evs, _ := readEvents(t, traj)
	calls := 0
	for _, e := range evs {
		if _, ok := e["virtual_time"]; !ok {
			t.Fatalf("event without virtual_time while armed: %v", e)
		}
		if str(e["event_type"]) == "tool_call" && strings.Contains(string(e["tool_call"]), `"get_time"`) {
			calls++
		}
	}
	if calls != 2 {
		t.Fatalf("get_time logged %d times for 2 calls", calls)
	}
	// Clear removes it and notifies.
	before := a.changed.Load()
	if st, body := tg.post(t, "/clock/clear", nil, ``); st != 200 || string(body) != `{"ok":true,"armed":false}`+"\n" && string(body) != `{"ok":true,"armed":false}` {
		t.Fatalf("clear = %d %s", st, body)
	}
	waitFor(t, "list_changed on clear", func() bool { return a.changed.Load() > before })
	if slices.Contains(a.toolNames(t), "get_time") {
		t.Fatal("get_time still listed after clear")
	}
	out = a.call(t, "get_time", map[string]any{})
	if !out.IsError || strings.Contains(out.text(), "armed") {
		t.Fatalf("unarmed get_time = %+v", out)
	}
}

func TestBackingGetTimeConflicts(t *testing.T) {
	c := startChild(t, "clocky", nil)
	c.srv.AddTools(c.echoTool("get_time"))
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	st, body, _ := tg.do(t, "PUT", "/clock/set-time", nil, `{"virtual_time":"2026-03-01T09:00:00Z"}`)
	if st != 409 || mustJSONMap(t, body)["error"] != "'get_time' is already registered by a backing server" {
		t.Fatalf("set-time over a backing get_time = %d %s", st, body)
	}
	tg.post(t, "/clock/clear", nil, ``)
	if _, ok := tg.reg.lookup("get_time"); !ok {
		t.Fatal("clear deleted the backing get_time")
	}
}

func TestActionTriggerThroughGateway(t *testing.T) {
	c := startChild(t, "desk", nil)
	c.srv.AddTools(c.echoTool("create_ticket"), c.echoTool("notify"))
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	reg := `{"watch_roles":["default"],"triggers":[{"id":"mirror","when":{"type":"action","tool":"create_ticket","repeat":true},
	  "barrier":{"at":"provoking_call","timeout_seconds":10},
	  "actions":[{"type":"tool","tool":"notify","args":{"body":"${args.title}"},"as":"system"}]}]}`
	st, body := tg.post(t, "/triggers/register", nil, reg)
	if st != 200 {
		t.Fatalf("register = %d %s", st, body)
	}
	a := tg.mcpClient(t, "")
	out := a.call(t, "create_ticket", map[string]any{"title": "printer on fire"})
	if out.IsError {
		t.Fatal(out.text())
	}
	// The barrier held the answer until the fire finished: the internal
	// call has already reached the child, stamped only with "as".
	if n := c.calls.Load(); n != 2 {
		t.Fatalf("child calls after the provoking call returned: %d", n)
	}
	if m := c.lastMeta(t); len(m) != 1 || m[protocol.MetaRole] != "system" {
		t.Fatalf("internal call _meta %v", m)
	}
	// Executor traffic and unwatched roles fire nothing; /step fires too.
	st, _ = tg.post(t, "/step", nil, `{"action":"call_tool","tool_name":"create_ticket","arguments":{"title":"x"}}`)
	if st != 200 || c.calls.Load() != 4 {
		t.Fatalf("/step provoking call: %d, child calls %d", st, c.calls.Load())
	}
	tg.mcpClient(t, "other").call(t, "create_ticket", map[string]any{"title": "y"})
	if c.calls.Load() != 5 {
		t.Fatalf("an unwatched role fired the trigger: %d", c.calls.Load())
	}
	_, traj, _ := tg.do(t, "GET", "/trajectory", nil, "")
	evs, _ := readEvents(t, traj)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, str(e["event_type"]))
	}
	joined := strings.Join(kinds, ",")
	if !strings.Contains(joined, "tool_call,tool_call_result,trigger_fired,internal_tool_call") {
		t.Fatalf("trajectory kinds %s", joined)
	}
	for _, e := range evs {
		if str(e["event_type"]) == "internal_tool_call" {
			if !strings.Contains(string(e["arguments"]), `"redacted"`) || str(e["as"]) != "system" {
				t.Fatalf("internal_tool_call %v", e)
			}
			if !regexp.MustCompile(`^event_\d+$`).MatchString(str(e["event_id"])) {
				t.Fatal("engine event without a core id")
			}
		}
	}
	var state struct {
		Triggers []struct {
			ID        string `json:"id"`
			FireCount int    `json:"fire_count"`
		} `json:"triggers"`
	}
	_, sb := tg.get(t, "/triggers/state", nil)
	json.Unmarshal(sb, &state)
	if len(state.Triggers) != 1 || state.Triggers[0].FireCount != 2 {
		t.Fatalf("/triggers/state %s", sb)
	}
}

func TestPermissionTriggerNotifiesAgents(t *testing.T) {
	c := startChild(t, "mail", nil)
	c.srv.AddTools(c.echoTool("send_email"))
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	a := tg.mcpClient(t, "")
	a.toolNames(t)
	reg := `{"triggers":[{"id":"lock","when":{"type":"action","tool":"mail_echo"},"barrier":{"at":"provoking_call"},
	  "actions":[{"type":"permission","action":"disable","role":"default","tools":["send_email"]}]}]}`
	if st, body := tg.post(t, "/triggers/register", nil, reg); st != 200 {
		t.Fatalf("register = %d %s", st, body)
	}
	a.call(t, "mail_echo", map[string]any{})
	waitFor(t, "list_changed after a permission action", func() bool { return a.changed.Load() >= 1 })
	if slices.Contains(a.toolNames(t), "send_email") {
		t.Fatal("send_email still visible after the permission action")
	}
}
