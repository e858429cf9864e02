package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lowTask scores 0: its second criterion fails, with output as the why.
const lowTask = `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
 {"id":"check","type":"verify_sandbox","sandbox_name":"box","verifier_id":"v","criteria":[
   {"type":"bash_cmd_succeeds","bash_cmd":"true"},
   {"type":"bash_cmd_succeeds","bash_cmd":"echo the file is missing; false"}]}]`

// --fail-under gates run, task run and eval run on the mean score (exit
// 2); without it a low score exits 0. A run below 1 lists its failing
// criteria with the reason.
func TestFailUnder(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "tasks", "low.json"), lowTask)

	code, out, _ := c.run("run", dir)
	if code != 0 {
		t.Fatalf("run without --fail-under: exit %d\n%s", code, out)
	}
	for _, want := range []string{"tasks/low.json v1: scored below 1 (check: 0)", "    - [v] bash_cmd_succeeds: bash_cmd=echo the file is missing; false\n", "      why: exit 1: the file is missing\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("run output lacks %q:\n%s", want, out)
		}
	}
	code, _, stderr := c.run("run", dir, "--fail-under", "0.5")
	if code != exitScoreBelow || !strings.Contains(stderr, "mean score 0 is below --fail-under 0.5") {
		t.Errorf("run --fail-under 0.5: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := c.run("run", "hello", "--fail-under", "1"); code != 0 {
		t.Errorf("hello --fail-under 1: exit %d %s", code, stderr)
	}
	if code, _, stderr := c.run("run", dir, "--fail-under", "2"); code != exitError || !strings.Contains(stderr, "want a score from 0 to 1") {
		t.Errorf("--fail-under 2: exit %d %s", code, stderr)
	}

	f := writeFile(t, filepath.Join(t.TempDir(), "low.json"), lowTask)
	if code, _, stderr := c.run("task", "create", f, "--id", "low"); code != 0 {
		t.Fatalf("task create: %d %s", code, stderr)
	}
	code, out, stderr = c.run("task", "run", "low", "--fail-under", "0.1", "--output-dir", t.TempDir())
	if code != exitScoreBelow || !strings.Contains(out, "Failing criteria:") {
		t.Errorf("task run --fail-under: exit %d\n%s\n%s", code, out, stderr)
	}
	e := writeFile(t, filepath.Join(t.TempDir(), "e.json"), `[{"task_id":"low"}]`)
	if code, _, stderr := c.run("eval", "create", e, "--id", "low-eval"); code != 0 {
		t.Fatalf("eval create: %d %s", code, stderr)
	}
	code, out, stderr = c.run("eval", "run", "low-eval", "--fail-under", "0.1", "--output-dir", t.TempDir())
	if code != exitScoreBelow || !strings.Contains(out, "Failing criteria (low run 1):") {
		t.Errorf("eval run --fail-under: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, _, _ := c.run("eval", "run", "low-eval", "--output-dir", t.TempDir()); code != 0 {
		t.Errorf("eval run without --fail-under: exit %d", code)
	}
}
