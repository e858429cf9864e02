package agentsdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/protocol"
)

type userSim struct{}

func (userSim) HostsTriggers() bool { return true }

func (userSim) Run(context.Context, *agentsdk.Task) (*agentsdk.Result, error) {
	return agentsdk.Text("llm user-sim answer"), nil
}

func startUserSim(t *testing.T) *agentsdktest.Agent {
	return agentsdktest.Start(t, &agentsdk.Card{Name: "user-sim"}, &agentsdk.Options{Agent: userSim{}, Logger: quiet()})
}

type decision struct {
	Parts []protocol.Part `json:"parts"`
	Done  bool            `json:"done"`
	Fired []string        `json:"fired"`
}

func decide(t *testing.T, a *agentsdktest.Agent, body map[string]any) decision {
	t.Helper()
	st, resp := ext(t, a, "POST", "/ext/triggers/decide", body)
	if st != 200 {
		t.Fatalf("decide %v: %d %s", body, st, resp)
	}
	var d decision
	if err := json.Unmarshal([]byte(resp), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestTriggersNotServedByDefault(t *testing.T) {
	a := start(t, echoAgent())
	if st, _ := ext(t, a, "GET", "/ext/triggers", nil); st != 404 {
		t.Fatalf("%d", st)
	}
}

func TestTriggersRegisterDecideState(t *testing.T) {
	a := startUserSim(t)
	e := cardExtension(t, a, protocol.URITriggers)
	methods := e["params"].(map[string]any)["methods"].(map[string]any)
	if methods["decide"].(map[string]any)["endpoint"] != "/ext/triggers/decide" || methods["state"].(map[string]any)["method"] != "GET" {
		t.Fatalf("card = %v", e)
	}
	reg := map[string]any{"triggers": []any{
		map[string]any{"id": "hello", "when": map[string]any{"type": "step", "turn": 1}, "actions": []any{map[string]any{"type": "say", "text": "Hi, please add readme"}}},
		map[string]any{"id": "thanks", "when": map[string]any{"type": "all", "of": []any{
			map[string]any{"type": "conversational", "where": map[string]any{"message": map[string]any{"regex": "(?i)added"}}},
			map[string]any{"type": "env_trigger", "env_id": "items", "trigger_id": "t1", "status": "fired"}}},
			"actions": []any{map[string]any{"type": "say", "text": "Thanks!"}, map[string]any{"type": "end"}}},
		map[string]any{"once": false, "when": map[string]any{"type": "step", "turn": 2, "cmp": "gte"}, "actions": []any{map[string]any{"type": "say", "text": "still here"}}},
	}}
	st, body := ext(t, a, "POST", "/ext/triggers", reg)
	var r struct {
		OK    bool
		Added []string
		All   []string
	}
	_ = json.Unmarshal([]byte(body), &r)
	if st != 200 || !r.OK || len(r.Added) != 3 || r.Added[0] != "hello" || !strings.HasPrefix(r.Added[2], "trg_") || len(r.Added[2]) != 16 {
		t.Fatalf("register: %d %s", st, body)
	}
	// Same id + same spec is allowed; a different spec is not.
	same := map[string]any{"triggers": []any{reg["triggers"].([]any)[0]}}
	if st, body := ext(t, a, "POST", "/ext/triggers", same); st != 200 || !strings.Contains(body, `"added":[]`) {
		t.Fatalf("idempotent: %d %s", st, body)
	}
	diff := map[string]any{"triggers": []any{map[string]any{"id": "hello", "when": map[string]any{"type": "step", "turn": 2}, "actions": []any{map[string]any{"type": "end"}}}}}
	if st, _ := ext(t, a, "POST", "/ext/triggers", diff); st != 400 {
		t.Fatalf("different spec: %d", st)
	}

	d := decide(t, a, map[string]any{"turn": 1, "context_id": "c1"})
	if len(d.Parts) != 1 || d.Parts[0].Text != "Hi, please add readme" || d.Done || len(d.Fired) != 1 {
		t.Fatalf("turn 1: %+v", d)
	}
	d = decide(t, a, map[string]any{"turn": 2, "context_id": "c1", "solver_message": "I added it",
		"env_triggers": map[string]any{"items": map[string]any{"t1": "fired"}}})
	if len(d.Parts) != 1 || d.Parts[0].Text != "Thanks!\nstill here" || !d.Done || len(d.Fired) != 2 {
		t.Fatalf("turn 2: %+v", d)
	}
	// once triggers do not fire again in the same context; repeatable ones do.
	d = decide(t, a, map[string]any{"turn": 3, "context_id": "c1", "solver_message": "added",
		"env_triggers": map[string]any{"items": map[string]any{"t1": "fired"}}})
	if len(d.Fired) != 1 || d.Done {
		t.Fatalf("turn 3: %+v", d)
	}
	// A turn ≤ the last turn resets the context's fired set.
	if d := decide(t, a, map[string]any{"turn": 1, "context_id": "c1"}); len(d.Fired) != 1 || d.Fired[0] != "hello" {
		t.Fatalf("after reset: %+v", d)
	}
	// A new context: only the repeatable trigger matches turn 5.
	if d := decide(t, a, map[string]any{"turn": 5, "context_id": "other"}); len(d.Parts) != 1 || d.Parts[0].Text != "still here" || d.Done || len(d.Fired) != 1 {
		t.Fatalf("turn 5: %+v", d)
	}
	st, body = ext(t, a, "GET", "/ext/triggers", nil)
	var state struct {
		Triggers  []map[string]any `json:"triggers"`
		FiringLog []map[string]any `json:"firing_log"`
	}
	_ = json.Unmarshal([]byte(body), &state)
	kinds := map[string]int{}
	for _, e := range state.FiringLog {
		kinds[e["kind"].(string)]++
	}
	if st != 200 || len(state.Triggers) != 3 || state.Triggers[1]["when_type"] != "all" || kinds["registered"] != 3 || kinds["reset"] != 1 || kinds["fired"] != 6 {
		t.Fatalf("state: %d %s", st, body)
	}
}

func TestTriggersValidation(t *testing.T) {
	a := startUserSim(t)
	say := []any{map[string]any{"type": "say", "text": "x"}}
	bad := []map[string]any{
		{"when": map[string]any{"type": "step", "turn": 0}, "actions": say},
		{"when": map[string]any{"type": "step", "turn": 1, "cmp": "lt"}, "actions": say},
		{"when": map[string]any{"type": "bogus"}, "actions": say},
		{"when": map[string]any{"type": "step", "turn": 1}, "actions": []any{}},
		{"when": map[string]any{"type": "step", "turn": 1}, "actions": []any{map[string]any{"type": "say", "text": ""}}},
		{"when": map[string]any{"type": "step", "turn": 1}, "actions": []any{map[string]any{"type": "say", "text": strings.Repeat("x", 8193)}}},
		{"when": map[string]any{"type": "conversational", "where": map[string]any{"message": map[string]any{"regex": "("}}}, "actions": say},
		{"when": map[string]any{"type": "conversational", "where": map[string]any{"message": map[string]any{"regex": "a", "equals": "b"}}}, "actions": say},
		{"when": map[string]any{"type": "conversational", "where": map[string]any{"message": map[string]any{"regex": strings.Repeat("a", 4097)}}}, "actions": say},
		{"when": map[string]any{"type": "env_trigger", "env_id": "e", "trigger_id": "t", "status": "armed"}, "actions": say},
		{"when": map[string]any{"type": "any", "of": []any{}}, "actions": say},
		{"id": strings.Repeat("i", 129), "when": map[string]any{"type": "step", "turn": 1}, "actions": say},
		{"when": map[string]any{"type": "step", "turn": 1}, "actions": say, "extra": 1},
		{"when": map[string]any{"type": "step", "turn": 1}, "actions": []any{map[string]any{"type": "say", "text": strings.Repeat("x", 8000)}, map[string]any{"type": "say", "text": strings.Repeat("y", 8000)}, map[string]any{"type": "say", "text": strings.Repeat("z", 8000)}}},
	}
	for i, b := range bad {
		if st, body := ext(t, a, "POST", "/ext/triggers", map[string]any{"triggers": []any{b}}); st != 400 {
			t.Errorf("case %d: %d %s", i, st, body)
		}
	}
	for _, b := range []map[string]any{{"turn": 0}, {"turn": "1"}, {"turn": true}, {}, {"turn": 1, "context_id": ""}, {"turn": 1, "x": 1},
		{"turn": 1, "solver_message": strings.Repeat("m", 200001)}, {"turn": 1, "context_id": strings.Repeat("c", 257)}} {
		if st, _ := ext(t, a, "POST", "/ext/triggers/decide", b); st != 400 {
			t.Errorf("decide %v: %d", b, st)
		}
	}
	// The trigger limit: 256.
	var many []any
	for i := range 257 {
		many = append(many, map[string]any{"id": fmt.Sprint("t", i), "when": map[string]any{"type": "step", "turn": 1}, "actions": say})
	}
	if st, _ := ext(t, a, "POST", "/ext/triggers", map[string]any{"triggers": many}); st != 400 {
		t.Fatalf("257 triggers: %d", st)
	}
	if st, body := ext(t, a, "POST", "/ext/triggers", map[string]any{"triggers": many[:256]}); st != 200 {
		t.Fatalf("256 triggers: %d %s", st, body)
	}
	// Nothing fires (every trigger is for turn 1): empty parts.
	if st, body := ext(t, a, "POST", "/ext/triggers/decide", map[string]any{"turn": 2, "context_id": "c0"}); st != 200 || body != `{"done":false,"fired":[],"parts":[]}` {
		t.Fatalf("known context: %d %s", st, body)
	}
}
