package triggers_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentenv/agentenv/gateway/triggers"
	"github.com/agentenv/agentenv/gateway/vclock"
)

// exampleHost is the smallest Host: one tool that echoes, no role rules,
// no changelog, trajectory printed.
type exampleHost struct{}

func (exampleHost) CallTool(ctx context.Context, as, tool string, args json.RawMessage) (json.RawMessage, bool, error) {
	fmt.Printf("internal call %s as %q with %s\n", tool, as, args)
	return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), false, nil
}
func (exampleHost) LookupTool(name string) (triggers.ToolInfo, bool) {
	return triggers.ToolInfo{}, true
}
func (exampleHost) Discovered() bool { return true }
func (exampleHost) ApplyRoleRule(role string, tools []string, all, disable bool) error {
	return nil
}
func (exampleHost) ChangelogID(context.Context) *int64 { return nil }
func (exampleHost) WriteTrajectory(ev triggers.TrajectoryEvent) {
	fmt.Printf("trajectory %s %s\n", ev.Type, ev.Payload())
}

func ExampleEngine_AfterToolCall() {
	eng := triggers.New(exampleHost{}, vclock.New(nil), nil)
	defer eng.Close()
	eng.Start()
	_, err := eng.Register(context.Background(), []byte(`{"triggers":[{"id":"mirror",
	  "when":{"type":"action","tool":"create_ticket","where":{"priority":{"equals":"high"}}},
	  "barrier":{"at":"provoking_call"},
	  "actions":[{"type":"tool","tool":"notify","args":{"ticket":"${result.id}"},"as":"system"}]}]}`))
	if err != nil {
		panic(err)
	}
	// What the core does after each completed /mcp or /step call:
	ctx := context.Background()
	b := eng.AfterToolCall(ctx, triggers.ToolCall{
		Role:   "default",
		Tool:   "create_ticket",
		Args:   json.RawMessage(`{"priority":"high"}`),
		Result: json.RawMessage(`{"content":[{"type":"text","text":"{\"id\":\"T-1\"}"}]}`),
	})
	b.Wait(ctx) // holds the answer until the fire settled
	fmt.Println(eng.State().Triggers[0].Status)
	// Output:
	// trajectory trigger_fired {"source":"trigger_engine","trigger_id":"mirror","provoking_tool":"create_ticket"}
	// internal call notify as "system" with {"ticket":"T-1"}
	// trajectory internal_tool_call {"source":"trigger_engine","trigger_id":"mirror","action_index":0,"tool":"notify","arguments":{"ticket":{"redacted":{"len":3,"type":"str"}}},"as":"system","ok":true,"result_len":2,"result_sha256":"2689367b205c16ce","changelog_id_before":null,"changelog_id_after":null}
	// fired
}
