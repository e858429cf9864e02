package envsteptest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

const gateTask = `[
 {"id":"env","type":"deploy_env","env_id":"%s","ttl_seconds":600},
 {"id":"card","type":"verify_env_card","env_id":"%[1]s"},
 {"id":"proto","type":"verify_env_core_protocol","env_id":"%[1]s"},
 {"id":"tools","type":"verify_mcp_tool_schema","env_id":"%[1]s"},
 {"id":"gate","type":"validation_gate_aggregator","env_id":"%[1]s"}]`

// TestEnvGatesPass: the example email env passes every env release gate on
// the process sandbox, and each gate writes its verdict and details.
func TestEnvGatesPass(t *testing.T) {
	f := envsteptest.New(t)
	rc, _, err := f.Run(t, fmt.Sprintf(gateTask, "email"), nil)
	if err != nil {
		t.Fatal(err)
	}
	gate, _ := rc.Metadata("validation_gate")
	g, _ := gate.(map[string]any)
	if g["passed"] != true {
		t.Fatalf("validation_gate %s\nverifications %s", asJSON(gate), asJSON(rc.Verifications()))
	}
	for _, id := range []string{"environment_card", "environment_protocol", "mcp_tool_schema"} {
		if v, err := rc.Verification(id); err != nil || v.Score != 1 {
			t.Errorf("%s: %+v %v", id, v, err)
		}
	}
	card, _ := rc.Metadata("validated_environment_card")
	if s := asJSON(card); !strings.Contains(s, `"accessible":true`) || !strings.Contains(s, `"passed":true`) {
		t.Errorf("validated_environment_card %s", s)
	}
	proto, _ := rc.Metadata("validated_environment_protocol")
	if s := asJSON(proto); !strings.Contains(s, `"email":{`) {
		t.Errorf("validated_environment_protocol %s", s)
	}
	tools, _ := rc.Metadata("mcp_tool_schema_validation")
	if m, _ := tools.(map[string]any); m["total_tools"] == float64(0) || m["total_tools"] == nil {
		t.Errorf("mcp_tool_schema_validation %s", asJSON(tools))
	}
}

// TestEnvGatesBroken: an env whose tool lacks descriptions fails the tool
// schema gate, and the aggregator names it among failed_gates.
func TestEnvGatesBroken(t *testing.T) {
	f := envsteptest.New(t)
	bin := buildBroken(t)
	if _, err := f.Putter.PutMCPServer(context.Background(), envdeploy.MCPServerInput{ID: "broken", EnvironmentName: "broken",
		Image: envdeploy.ImageInput{Binary: bin}}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := f.Run(t, fmt.Sprintf(gateTask, "broken"), nil)
	if err != nil {
		t.Fatal(err)
	}
	gate, _ := rc.Metadata("validation_gate")
	s := asJSON(gate)
	if !strings.Contains(s, `"passed":false`) || !strings.Contains(s, `"failed_gates":["mcp_tool_schema"]`) {
		t.Fatalf("validation_gate %s", s)
	}
	tools, _ := rc.Metadata("mcp_tool_schema_validation")
	ts := asJSON(tools)
	for _, want := range []string{`"tools_missing_description":["broken_search"]`, `parameter 'query' missing description`, `parameter 'tags' is array without items type`} {
		if !strings.Contains(ts, want) {
			t.Errorf("mcp_tool_schema_validation lacks %s: %s", want, ts)
		}
	}
}

// TestGateAggregatorMissing: a required gate that never ran fails the
// aggregate as missing (fail closed).
func TestGateAggregatorMissing(t *testing.T) {
	f := envsteptest.New(t)
	rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"card","type":"verify_env_card","env_id":"email"},
	 {"id":"gate","type":"validation_gate_aggregator","env_id":"email","required_gates":["environment_card","mcp_tool_correctness"]}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	gate, _ := rc.Metadata("validation_gate")
	if s := asJSON(gate); !strings.Contains(s, `"passed":false`) || !strings.Contains(s, `"missing_gates":["mcp_tool_correctness"]`) || !strings.Contains(s, `"failed_gates":[]`) {
		t.Fatalf("validation_gate %s", s)
	}
}

func buildBroken(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	dir := t.TempDir()
	p, err := imagebuild.BuildGo(context.Background(), "./runner/steps/envgates/testdata/brokenenv", dir, &imagebuild.GoOptions{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}
