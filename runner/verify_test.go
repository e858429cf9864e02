package runner_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentenv/agentenv/runner"
)

func rows(js string) []runner.Row {
	var r []runner.Row
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		panic(err)
	}
	return r
}

func TestAggregators(t *testing.T) {
	cases := []struct {
		name string
		agg  runner.Aggregator
		rows string
		want float64
	}{
		{"all pass", runner.AllPass, `[{"result":true},{"result":true}]`, 1},
		{"all pass one fails", runner.AllPass, `[{"result":true},{"result":false}]`, 0},
		{"all pass skipped excluded", runner.AllPass, `[{"result":true},{"result":false,"skipped":true}]`, 1},
		{"all pass only skipped", runner.AllPass, `[{"result":true,"skipped":true}]`, 0},
		{"empty", runner.AllPass, `[]`, 0},
		{"any pass", runner.AnyPass, `[{"result":false},{"result":true}]`, 1},
		{"any pass none", runner.AnyPass, `[{"result":false}]`, 0},
		{"any empty", runner.AnyPass, `[]`, 0},
		{"weighted default scores", runner.WeightedAverage, `[{"result":true},{"result":false}]`, 0.5},
		{"weighted explicit", runner.WeightedAverage, `[{"result":true,"score":1,"weight":3},{"result":false,"score":0,"weight":1}]`, 0.75},
		{"weighted partial score", runner.WeightedAverage, `[{"result":false,"score":0.5}]`, 0.5},
		{"weighted penalty", runner.WeightedAverage, `[{"result":true,"weight":2},{"result":false,"weight":-1}]`, 0.5},
		{"weighted penalty clamps", runner.WeightedAverage, `[{"result":true,"weight":1},{"result":false,"weight":-5}]`, 0},
		{"weighted passing penalty row costs nothing", runner.WeightedAverage, `[{"result":true},{"result":true,"weight":-1}]`, 1},
		{"weighted no positive weight", runner.WeightedAverage, `[{"result":true,"weight":0}]`, 0},
		{"weighted empty", runner.WeightedAverage, `[]`, 0},
		{"weighted skipped", runner.WeightedAverage, `[{"result":true},{"result":false,"skipped":true}]`, 1},
	}
	for _, tc := range cases {
		if got := tc.agg.Aggregate(rows(tc.rows)); got != tc.want {
			t.Errorf("%s: %g, want %g", tc.name, got, tc.want)
		}
	}
	var a runner.Aggregator
	if err := a.UnmarshalText([]byte("median")); err == nil {
		t.Error("median accepted")
	}
}

func TestVerificationJSON(t *testing.T) {
	b, _ := json.Marshal(runner.Verification{Score: 1})
	if string(b) != `{"results":[],"score":1}` {
		t.Errorf("%s", b)
	}
	b, _ = json.Marshal(runner.Verification{Score: 0.5, SourceVerifierIDs: []string{"a", "b"}})
	if string(b) != `{"score":0.5,"source_verifier_ids":["a","b"]}` {
		t.Errorf("%s", b)
	}
}

func TestDiffApply(t *testing.T) {
	doc := func(js string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(js), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := []struct {
		name, before, after string
		paths               []string
	}{
		{"nothing", `{"a":1}`, `{"a":1}`, nil},
		{"set leaf", `{"metadata":{"x":1}}`, `{"metadata":{"x":2}}`, []string{"set metadata.x"}},
		{"new key", `{"metadata":{}}`, `{"metadata":{"v":{"hello":{"score":1}}}}`, []string{"set metadata.v"}},
		{"nested new", `{"metadata":{"v":{"a":1}}}`, `{"metadata":{"v":{"a":1,"b":2}}}`, []string{"set metadata.v.b"}},
		{"list grew", `{"l":[1]}`, `{"l":[1,2,3]}`, []string{"add l"}},
		{"list changed", `{"l":[1,2]}`, `{"l":[2]}`, []string{"set l"}},
		{"unset", `{"a":1,"b":2}`, `{"a":1}`, []string{"unset b"}},
	}
	for _, tc := range cases {
		ops := runner.Diff(doc(tc.before), doc(tc.after))
		if !reflect.DeepEqual(ops.Paths(), tc.paths) {
			t.Errorf("%s: paths %v, want %v", tc.name, ops.Paths(), tc.paths)
		}
		got := doc(tc.before)
		ops.Apply(got)
		if !reflect.DeepEqual(got, doc(tc.after)) {
			t.Errorf("%s: applied %v, want %v", tc.name, got, tc.after)
		}
	}
	// Add-to-set merges as a union: applying twice, or over a concurrent
	// writer's additions, adds nothing twice.
	ops := runner.Diff(doc(`{"l":[1]}`), doc(`{"l":[1,2]}`))
	other := doc(`{"l":[1,3]}`)
	ops.Apply(other)
	ops.Apply(other)
	if !reflect.DeepEqual(other, doc(`{"l":[1,3,2]}`)) {
		t.Errorf("union: %v", other)
	}
}

func TestRunContextLookups(t *testing.T) {
	rc := runner.NewRunContext(map[string]any{"prompt_responses": []any{
		map[string]any{"prompt_id": "p1", "response": "old"},
		map[string]any{"prompt_id": "p1", "response": "new"},
	}}, nil)
	pr, err := rc.PromptResponse("p1")
	if err != nil || pr.Response != "new" {
		t.Errorf("PromptResponse = %+v, %v", pr, err)
	}
	if _, err := rc.PromptResponse("p2"); err == nil {
		t.Error("unknown prompt id found")
	}
	if err := rc.AddSandbox(runner.DeployedSandbox{SandboxName: "a", SandboxID: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := rc.AddSandbox(runner.DeployedSandbox{SandboxName: "a", SandboxID: "y"}, nil); err == nil {
		t.Error("duplicate sandbox name accepted")
	}
	cp := rc.Copy()
	cp.SetMetadata("only_copy", true)
	if _, ok := rc.Metadata("only_copy"); ok {
		t.Error("Copy shares its document")
	}
}

func TestEnvAndAgentLookups(t *testing.T) {
	rc := runner.NewRunContext(map[string]any{"deployed_envs": []any{
		map[string]any{"env_id": "items", "mcp_url": "http://a/mcp", "metadata": map[string]any{"deploy_step_id": "d1"}, "extra": 1},
	}}, nil)
	if e, err := rc.Env("items", ""); err != nil || e.MCPURL != "http://a/mcp" || e.DeployStepID() != "d1" {
		t.Errorf("Env = %+v, %v", e, err)
	}
	if err := rc.AddEnv(runner.DeployedEnv{EnvID: "items"}); !errors.Is(err, runner.ErrDuplicateName) {
		t.Errorf("duplicate env: %v", err)
	}
	if _, err := rc.Env("items", "d2"); !errors.Is(err, runner.ErrUnknownName) {
		t.Errorf("wrong env_step_id: %v", err)
	}
	if err := rc.AddAgent(runner.DeployedAgent{A2AURL: "http://agent"}); err != nil {
		t.Fatal(err)
	}
	if a, err := rc.Agent(""); err != nil || a.AgentName != "default-agent" || a.A2AURL != "http://agent" {
		t.Errorf("Agent = %+v, %v", a, err)
	}
	if err := rc.AddAgent(runner.DeployedAgent{AgentName: "default-agent"}); !errors.Is(err, runner.ErrDuplicateName) {
		t.Errorf("duplicate agent: %v", err)
	}
	if _, err := rc.Agent("judge"); err == nil || err.Error() != `no agent named "judge" in the run context (have: [default-agent])` {
		t.Errorf("unknown agent: %v", err)
	}
	// Unknown fields of an entry survive in the document.
	if e := rc.Snapshot()["deployed_envs"].([]any)[0].(map[string]any); e["extra"] != 1.0 {
		t.Errorf("entry lost a field: %v", e)
	}
}

func TestVerifierDefaults(t *testing.T) {
	if got := runner.Aggregator("").OrDefault(); got != runner.AllPass {
		t.Errorf("no aggregator: %q, want all_pass", got)
	}
	if got := runner.AnyPass.OrDefault(); got != runner.AnyPass {
		t.Errorf("any_pass became %q", got)
	}
	if got := runner.VerifierIDOrNew("v1"); got != "v1" {
		t.Errorf("given id became %q", got)
	}
	a, b := runner.VerifierIDOrNew(""), runner.VerifierIDOrNew("")
	if len(a) != 16 || a == b {
		t.Errorf("fresh ids %q %q: want two different 16-hex ids", a, b)
	}
}
