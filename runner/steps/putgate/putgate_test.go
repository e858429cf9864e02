package putgate_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/steps/putgate"
)

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func validate(t *testing.T, id, pkg string) *putgate.Report {
	t.Helper()
	return validateIn(t, id, pkg, "")
}

// validateIn is validate for a package of the module in folder sub of
// the repository ("" = the repository's own module).
func validateIn(t *testing.T, id, pkg, sub string) *putgate.Report {
	t.Helper()
	root := moduleRoot(t)
	tmp := t.TempDir()
	rep, err := putgate.ValidateMCPServer(context.Background(), envdeploy.MCPServerInput{ID: id, EnvironmentName: id,
		Image: envdeploy.ImageInput{GoPackage: pkg, GoDir: filepath.Join(root, sub)}},
		&putgate.Options{Gateway: envdeploy.ImageInput{GoPackage: "./cmd/agentenv-gateway", GoDir: root}, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing is left behind: stores, processes and their folders are gone.
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in the temp folder: %v", left)
	}
	return rep
}

// The example echo env passes every gate.
func TestExampleEnvPasses(t *testing.T) {
	rep := validate(t, "echo", "./examples/envs/echo/cmd/echo-env")
	if !rep.Passed {
		t.Fatalf("echo failed: %v", rep.Error())
	}
	if s := rep.String(); !strings.Contains(s, "gate mcp_tool_schema: passed") || !strings.Contains(s, "gate environment_card: passed") ||
		!strings.Contains(s, "gate spec_conformance: skipped (advisory)") {
		t.Errorf("summary %q", s)
	}
}

// The broken testdata env fails, and the report names the failed gate
// and its problems, and no passing gate.
func TestBrokenEnvFails(t *testing.T) {
	rep := validate(t, "broken", "./runner/steps/envgates/testdata/brokenenv")
	if rep.Passed {
		t.Fatal("broken env passed")
	}
	msg := rep.Error()
	for _, want := range []string{"env broken failed validation (nothing was stored)", "gate mcp_tool_schema: FAILED",
		"tool broken_search: missing description", "parameter 'query' missing description"} {
		if !strings.Contains(msg, want) {
			t.Errorf("report lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "environment_card") || strings.Contains(msg, "environment_protocol") {
		t.Errorf("report names a passing gate:\n%s", msg)
	}
	// Its OpenAPI document drifts from its tool: reported, not enforced.
	for _, want := range []string{"gate spec_conformance: FAILED (advisory, not enforced)", "missing_tool delete",
		"type_mismatch broken_search"} {
		if !strings.Contains(msg, want) {
			t.Errorf("report lacks %q:\n%s", want, msg)
		}
	}
}

// A source the process sandbox cannot run is refused before anything is
// built.
func TestNeedsBinary(t *testing.T) {
	_, err := putgate.ValidateMCPServer(context.Background(), envdeploy.MCPServerInput{ID: "x",
		Image: envdeploy.ImageInput{ImageRef: "x:1"}}, nil)
	if !errors.Is(err, putgate.ErrNeedsBinary) {
		t.Fatalf("err %v", err)
	}
}

// The tutorial's notes env describes its parameters with jsonschema tags
// (the official MCP Go SDK's convention); envsdk reads them, so it passes
// the tool schema gate too.
func TestTutorialEnvPasses(t *testing.T) {
	// The tutorial is a module of its own that requires this one: a
	// workspace resolves it to this checkout.
	root := moduleRoot(t)
	work := filepath.Join(t.TempDir(), "go.work")
	if err := os.WriteFile(work, []byte("go 1.26.0\n\nuse (\n\t"+root+"\n\t"+filepath.Join(root, "examples/tutorial/notes")+"\n)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOWORK", work)
	// Workspace mode refuses -mod=mod, which CI puts in GOFLAGS.
	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if !strings.HasPrefix(f, "-mod=") {
			flags = append(flags, f)
		}
	}
	t.Setenv("GOFLAGS", strings.Join(flags, " "))
	rep := validateIn(t, "notes", "./cmd/notes-env", "examples/tutorial/notes")
	if !rep.Passed {
		t.Fatalf("notes failed: %v", rep.Error())
	}
}

func validateAgent(t *testing.T, id, pkg string) *putgate.Report {
	t.Helper()
	tmp := t.TempDir()
	rep, err := putgate.ValidateA2AAgent(context.Background(), envdeploy.AgentInput{ID: id,
		Image: envdeploy.ImageInput{GoPackage: pkg, GoDir: moduleRoot(t)}}, &putgate.Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in the temp folder: %v", left)
	}
	return rep
}

// The example scripted agent passes every agent gate.
func TestExampleAgentPasses(t *testing.T) {
	rep := validateAgent(t, "scripted", "./examples/agents/scripted")
	if !rep.Passed {
		t.Fatalf("scripted failed: %v", rep.Error())
	}
	if s := rep.String(); !strings.Contains(s, "gate a2a_core_protocol: passed") || !strings.Contains(s, "gate a2a_agent_card: passed") ||
		!strings.Contains(s, "gate a2a_install: passed") {
		t.Errorf("summary %q", s)
	}
}

// The broken testdata agent fails, and the report names each failed gate
// with its problems; the gates that do not apply to it (system prompt,
// peers) are not named.
func TestBrokenAgentFails(t *testing.T) {
	rep := validateAgent(t, "broken", "./runner/steps/a2agates/testdata/brokenagent")
	if rep.Passed {
		t.Fatal("broken agent passed")
	}
	msg := rep.Error()
	for _, want := range []string{"agent broken failed validation (nothing was stored)",
		"gate a2a_agent_card: FAILED", "card field description is missing",
		"gate a2a_modalities: FAILED", "defaultOutputModes [image/png] lacks text",
		"gate a2a_core_protocol: FAILED", "gate a2a_agent_config_identity: FAILED", "gate a2a_role: FAILED",
		"gate a2a_agent_mcp: FAILED", "gate a2a_trajectory: FAILED", "gate a2a_install: FAILED"} {
		if !strings.Contains(msg, want) {
			t.Errorf("report lacks %q:\n%s", want, msg)
		}
	}
	for _, not := range []string{"a2a_system_prompt", "a2a_peer_agents"} {
		if strings.Contains(msg, not) {
			t.Errorf("report names skipped gate %s:\n%s", not, msg)
		}
	}
}
