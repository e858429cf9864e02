package agentsdk_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/protocol"
)

// advancedAgent mirrors the reference's advanced example: agent-config
// set/get and triggers overridden, delegating to the defaults; decide
// adds done:true and the fired id reference-turn-limit at turn ≥ 3.
type advancedAgent struct {
	ops map[string]map[string]agentsdk.Override
}

func (a advancedAgent) Run(context.Context, *agentsdk.Task) (*agentsdk.Result, error) {
	return agentsdk.Text("ok"), nil
}

func (advancedAgent) HostsTriggers() bool { return true }

func (a advancedAgent) OverrideOperations() map[string]map[string]agentsdk.Override { return a.ops }

func passthrough(ctx context.Context, in *agentsdk.ExtRequest, next func(context.Context, *agentsdk.ExtRequest) (any, error)) (any, error) {
	return next(ctx, in)
}

func newAdvanced() advancedAgent {
	return advancedAgent{ops: map[string]map[string]agentsdk.Override{
		protocol.URIAgentConfig: {
			"set": func(ctx context.Context, in *agentsdk.ExtRequest, next func(context.Context, *agentsdk.ExtRequest) (any, error)) (any, error) {
				var m map[string]any
				_ = in.Decode(&m)
				if m["role"] == "forbidden" {
					return nil, agentsdk.ExtError(400, "role: not allowed here")
				}
				return next(ctx, in)
			},
			"get": passthrough,
		},
		protocol.URITriggers: {
			"register": passthrough,
			"state":    passthrough,
			"decide": func(ctx context.Context, in *agentsdk.ExtRequest, next func(context.Context, *agentsdk.ExtRequest) (any, error)) (any, error) {
				out, err := next(ctx, in)
				if err != nil {
					return nil, err
				}
				var req struct{ Turn int }
				_ = in.Decode(&req)
				d := out.(map[string]any)
				if req.Turn >= 3 {
					d["done"] = true
					d["fired"] = append(d["fired"].([]string), "reference-turn-limit")
				}
				return d, nil
			},
		},
	}}
}

func TestOverridesDelegateToDefaults(t *testing.T) {
	a := agentsdktest.Start(t, &agentsdk.Card{Name: "advanced"}, &agentsdk.Options{Agent: newAdvanced(), Logger: quiet()})
	if st, body := ext(t, a, "POST", protocol.AgentConfigPath, map[string]any{"role": "forbidden"}); st != 400 {
		t.Fatalf("override refusal: %d %s", st, body)
	}
	if st, _ := ext(t, a, "POST", protocol.AgentConfigPath, map[string]any{"role": "user"}); st != 200 {
		t.Fatal(st)
	}
	if st, body := ext(t, a, "GET", protocol.AgentConfigPath, nil); st != 200 || body != `{"config":{"role":"user"}}` {
		t.Fatalf("get: %d %s", st, body)
	}
	if st, _ := ext(t, a, "POST", protocol.AgentConfigPath, map[string]any{"bogus": 1}); st != 400 {
		t.Fatal("default validation lost")
	}
	d := decide(t, a, map[string]any{"turn": 3})
	if !d.Done || len(d.Fired) != 1 || d.Fired[0] != "reference-turn-limit" {
		t.Fatalf("decide: %+v", d)
	}
	if d := decide(t, a, map[string]any{"turn": 4, "context_id": "x"}); !d.Done {
		t.Fatalf("decide 4: %+v", d)
	}
	if d := decide(t, a, map[string]any{"turn": 1, "context_id": "y"}); d.Done {
		t.Fatalf("decide 1: %+v", d)
	}
	_, body := ext(t, a, "GET", "/ext/triggers", nil)
	var st map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &st) != nil || st["firing_log"] == nil {
		t.Fatalf("state: %s", body)
	}
}

func TestOverridesAreAllOrNothing(t *testing.T) {
	for name, ops := range map[string]map[string]map[string]agentsdk.Override{
		"partial":        {protocol.URIAgentConfig: {"set": passthrough}},
		"unknown op":     {protocol.URIAgentConfig: {"set": passthrough, "get": passthrough, "delete": passthrough}},
		"not an sdk ext": {"urn:example:x/v1": {"op": passthrough}},
	} {
		_, err := agentsdk.New(&agentsdk.Card{Name: "x"}, &agentsdk.Options{Agent: advancedAgent{ops: ops}})
		if err == nil {
			t.Errorf("%s: want error", name)
		}
	}
}
