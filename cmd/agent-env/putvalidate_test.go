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
