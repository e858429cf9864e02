package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
)

// env mcp-server create-cli builds the echo env's CLI (deploying it on the
// process sandbox and tearing it down), and the written binary calls the
// tool through a separately deployed copy with a role credential.
func TestEnvCreateCLI(t *testing.T) {
	bins := envdeploytest.Build(t)
	c := newCLI(t)
	if code, out, errb := c.run("env", "gateway", "put", "--binary", bins.Gateway); code != 0 {
		t.Fatalf("gateway put: %s %s", out, errb)
	}
	if code, out, errb := c.run("env", "mcp-server", "put", "--id", "echo", "--binary", bins.Echo, "--environment-name", "echo"); code != 0 {
		t.Fatalf("put: %s %s", out, errb)
	}
	dir := t.TempDir()
	code, out, errb := c.run("env", "mcp-server", "create-cli", "--id", "echo", "--sandbox", "process", "--command-name", "echo-tool", "--output-dir", dir)
	if code != 0 || !strings.Contains(out, "Created cli: id=echo-cli version=1 command_name=echo-tool tools=") || !strings.Contains(out, "Wrote "+dir+"/echo-tool") {
		t.Fatalf("create-cli: exit %d\n%s\n%s", code, out, errb)
	}
	if left, _ := os.ReadDir(filepath.Join(c.sandboxDir, "process")); len(left) != 0 {
		t.Errorf("create-cli left processes: %v", left)
	}
	code, out, errb = c.run("env", "deploy", "--id", "echo", "--sandbox", "process", "--ttl-seconds", "600")
	m := instanceIDRe.FindStringSubmatch(out)
	gw := regexp.MustCompile(`Env Gateway Url: (\S+)`).FindStringSubmatch(out)
	if code != 0 || m == nil || gw == nil {
		t.Fatalf("deploy: %d %s %s", code, out, errb)
	}
	t.Cleanup(func() { c.run("env", "teardown", "--instance-id", m[1]) })
	code, tok, errb := c.run("env", "role-token", "--instance-id", m[1], "--role", "cli")
	if code != 0 {
		t.Fatalf("role-token: %s", errb)
	}
	cmd := exec.Command(filepath.Join(dir, "echo-tool"), "--url", gw[1], "echo_echo", "--text", "hello from a shell")
	cmd.Env = []string{"AGENTENV_TOKEN=" + strings.TrimSpace(tok)}
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "hello from a shell") {
		t.Fatalf("echo-tool: %v\n%s", err, got)
	}
	// An unknown env is refused by the deploy step, naming it.
	if code, _, errb := c.run("env", "mcp-server", "create-cli", "--id", "nope", "--sandbox", "process"); code == 0 || !strings.Contains(errb, "nope") {
		t.Errorf("unknown env: exit %d %s", code, errb)
	}
}
