package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// task validate FILE checks a file without storing it and lists every
// problem one per line; task create --json reports parse problems as a
// list too.
func TestTaskValidateFile(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	good := writeFile(t, filepath.Join(dir, "good.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"v","type":"verify_sandbox","sandbox_name":"box","depends_on":["box"],
	   "criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"true"}]}]`)
	if code, out, stderr := c.run("task", "validate", good); code != 0 || out != "Task file "+good+": no problems.\n" {
		t.Fatalf("validate good: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, _, _ := c.run("task", "get", "--id", good); code == 0 {
		t.Error("task validate FILE stored the task")
	}
	bad := writeFile(t, filepath.Join(dir, "bad.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_mode":"vm"},
	  {"id":"v","type":"verify_sandbox","depends_on":["box", "box2"]}]`)
	code, _, stderr := c.run("task", "validate", bad)
	want := "Error: 3 problems in the task:\n" +
		"  step 1 (id \"box\"): field \"sandbox_name\": is required\n" +
		"  step 2 (id \"v\"): field \"criteria\": is required\n" +
		"  step 2 (id \"v\"): field \"depends_on[1]\": depends on an unknown step \"box2\"\n"
	if code != 1 || stderr != want {
		t.Errorf("validate bad: exit %d\n%s\nwant\n%s", code, stderr, want)
	}
	code, out, _ := c.run("task", "create", bad, "--id", "bad", "--json")
	var refused struct {
		Saved    bool     `json:"saved"`
		Problems []string `json:"problems"`
	}
	if code != 1 || json.Unmarshal([]byte(out), &refused) != nil || refused.Saved || len(refused.Problems) != 3 ||
		!strings.Contains(refused.Problems[2], `depends_on[1]`) {
		t.Errorf("create --json: exit %d\n%s", code, out)
	}
	if code, _, stderr := c.run("task", "validate"); code != 1 || stderr != "Error: give a task FILE or --id\n" {
		t.Errorf("validate without FILE or --id: exit %d %q", code, stderr)
	}
}

// agent-env run hello --sandbox process works, as the README suggests:
// the bare sandbox of the hello task is a host work folder.
func TestRunHelloOnProcessSandbox(t *testing.T) {
	c := newCLI(t)
	code, out, stderr := c.run("run", "hello", "--sandbox", "process")
	if code != 0 || !strings.Contains(out, "tasks/hello.json v1: passed (hello: 1)") || !strings.Contains(out, "Tore down 1 sandbox.") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	// A process run never talks about Docker or a local image registry.
	if all := strings.ToLower(out + stderr); strings.Contains(all, "docker") || strings.Contains(all, "localhost:5000") {
		t.Errorf("a --sandbox process run mentions Docker:\n%s\n%s", out, stderr)
	}
}
