package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
)

// env mcp-server put --validate: the example echo env passes the gates
// and is stored; the broken testdata env is refused with a report naming
// the failed gate, and nothing is stored (a later plain put is version 1).
func TestEnvPutValidate(t *testing.T) {
	bins := envdeploytest.Build(t)
	// The gates' gateway is found on PATH, as an installed CLI finds it.
	if filepath.Base(bins.Gateway) != "agentenv-gateway" {
		t.Fatalf("gateway binary %s", bins.Gateway)
	}
	t.Setenv("PATH", filepath.Dir(bins.Gateway)+string(os.PathListSeparator)+os.Getenv("PATH"))
	broken, err := imagebuild.BuildGo(context.Background(), "./runner/steps/envgates/testdata/brokenenv", t.TempDir(), &imagebuild.GoOptions{Dir: "../.."})
	if err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	code, out, stderr := c.run("env", "mcp-server", "put", "--id", "echo", "--binary", bins.Echo, "--environment-name", "echo", "--validate")
	if code != 0 || !strings.Contains(out, "gate mcp_tool_schema: passed") || !strings.Contains(out, "version=1") {
		t.Fatalf("echo put --validate: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = c.run("env", "mcp-server", "put", "--id", "broken", "--binary", broken,
		"--environment-name", "broken", "--validate")
	if code == 0 {
		t.Fatalf("broken put --validate succeeded:\n%s\n%s", out, stderr)
	}
	for _, want := range []string{"env broken failed validation (nothing was stored)", "gate mcp_tool_schema: FAILED", "tool broken_search: missing description"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	code, out, stderr = c.run("env", "mcp-server", "put", "--id", "broken", "--binary", broken,
		"--environment-name", "broken")
	if code != 0 || !strings.Contains(out, "version=1") {
		t.Fatalf("plain put after a refused one: exit %d\n%s\n%s", code, out, stderr)
	}
}

// a2a-agent put --validate: the scripted example agent passes the agent
// gates and is stored; the broken testdata agent is refused with a report
// naming the failed gates, and nothing is stored.
func TestAgentPutValidate(t *testing.T) {
	bins := envdeploytest.Build(t)
	broken, err := imagebuild.BuildGo(context.Background(), "./runner/steps/a2agates/testdata/brokenagent", t.TempDir(), &imagebuild.GoOptions{Dir: "../.."})
	if err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	code, out, stderr := c.run("a2a-agent", "put", "--id", "scripted", "--binary", bins.Agent, "--validate")
	if code != 0 || !strings.Contains(out, "gate a2a_core_protocol: passed") {
		t.Fatalf("scripted put --validate: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = c.run("a2a-agent", "put", "--id", "broken", "--binary", broken, "--validate")
	if code == 0 {
		t.Fatalf("broken put --validate succeeded:\n%s\n%s", out, stderr)
	}
	for _, want := range []string{"agent broken failed validation (nothing was stored)", "gate a2a_agent_card: FAILED", "gate a2a_core_protocol: FAILED"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code, _, _ := c.run("a2a-agent", "get", "--id", "broken"); code == 0 {
		t.Error("the refused agent was stored")
	}
}
