package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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
	cmd := exec.Command(bin, "run", dir)
	cmd.Env = os.Environ() // HOME, XDG_STATE_HOME, AGENT_ENV_* set by newCLI
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var out strings.Builder
	deadline := time.After(60 * time.Second)
	for waiting := true; waiting; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("agent-env ended early:\n%s\n%s", out.String(), stderr.String())
			}
			out.WriteString(l + "\n")
			waiting = !strings.Contains(l, "step 2/2 wait (verify_sandbox)")
		case <-deadline:
			t.Fatalf("the slow step never started:\n%s", out.String())
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		out.WriteString(l + "\n")
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Errorf("exit: %v, want 130\n%s\n%s", err, out.String(), stderr.String())
	}
	s := out.String()
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
