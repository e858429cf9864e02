package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
)

// buildCLI builds the agent-env binary into a temporary folder. Call it
// before newCLI moves HOME: the Go build and module caches live under the
// real one.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agent-env")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// A real SIGINT to a real agent-env process (main.go's signal wiring, not
// a cancelled context): exit 130, the sandbox torn down, the instance
// recorded as cancelled.
func TestProcessSIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildCLI(t)
	c := newCLI(t)
	dir := filepath.Join(t.TempDir(), "slow")
	writeFile(t, filepath.Join(dir, "tasks", "slow.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"wait","type":"verify_sandbox","sandbox_name":"box","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"sleep 300"}]}]`)
	ch := startCLI(t, bin, "run", dir)
	ch.waitLine("step 2/2 wait (verify_sandbox)")
	if err := ch.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := ch.exitCode(); code != exitInterrupted {
		t.Errorf("exit %d, want 130\n%s", code, ch.output())
	}
	s := ch.stdout()
	if !strings.Contains(s, "tasks/slow.json v1: cancelled") || !strings.HasSuffix(s, "Tore down 1 sandbox.\n") {
		t.Errorf("output:\n%s", s)
	}
	if left := c.leftoverSandboxes(); len(left) != 0 {
		t.Errorf("leftover work folders: %v", left)
	}
	id := regexp.MustCompile(`instance (\S+-[a-z0-9]{8})\n`).FindStringSubmatch(s)
	if id == nil {
		t.Fatalf("no instance id in:\n%s", s)
	}
	if inst := c.instance(id[1]); inst.Status != runner.StatusCancelled || inst.Error == nil || *inst.Error != "cancelled by Ctrl-C" {
		t.Errorf("instance %s %v", inst.Status, inst.Error)
	}
}
