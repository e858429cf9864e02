package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
)

// bundle init exports the hello task (its artifact reference pinned) and
// the folder runs under its own id root, reusing unchanged versions.
func TestBundleInitFromHello(t *testing.T) {
	c := newCLI(t)
	if code, out, stderr := c.run("run", "hello"); code != 0 {
		t.Fatalf("run hello: %d\n%s\n%s", code, out, stderr)
	}
	dir := filepath.Join(t.TempDir(), "my-hello")
	code, out, stderr := c.run("bundle", "init", dir, "--from-task", "@local/agentenv-framework/hello/hello")
	want := "Found task: id=@local/agentenv-framework/hello/hello version=1 steps=3\n" +
		"  Pinned step load artifact_id: @local/agentenv-framework/hello/greeting version=1\n" +
		"Wrote " + filepath.Join(dir, "tasks", "hello.json") + "\nWrote " + filepath.Join(dir, "README.md") + "\n" +
		"Run it with: agent-env run " + dir + "\n"
	if code != 0 || out != want || stderr != "" {
		t.Fatalf("bundle init: exit %d\n%s\nwant\n%s\nstderr %s", code, out, want, stderr)
	}
	task := string(mustRead(t, filepath.Join(dir, "tasks", "hello.json")))
	if !strings.Contains(task, `"artifact_id":"@local/agentenv-framework/hello/greeting","artifact_version":1`) ||
		strings.Contains(task, `"version":null`) || strings.Count(task, "\n") != 5 {
		t.Errorf("task file:\n%s", task)
	}
	readme := string(mustRead(t, filepath.Join(dir, "README.md")))
	if !strings.HasPrefix(readme, "Task @local/agentenv-framework/hello/hello version 1, exported with agent-env bundle init.\n") {
		t.Errorf("README:\n%s", readme)
	}

	code, out, _ = c.run("run", dir)
	root := "@local/" + strings.TrimPrefix(dir, "/")
	if code != 0 || !strings.HasPrefix(out, "tasks/hello.json: v1 (new)\n") || !strings.Contains(out, "passed (hello: 1)") ||
		!strings.Contains(out, "instance "+root+"/hello-") {
		t.Fatalf("first folder run: exit %d\n%s", code, out)
	}
	code, out, _ = c.run("run", dir)
	if code != 0 || !strings.HasPrefix(out, "tasks/hello.json: v1, unchanged\n") || !strings.Contains(out, "passed (hello: 1)") {
		t.Errorf("second folder run: exit %d\n%s", code, out)
	}
	// An edit makes a new version of the folder's task.
	if err := os.WriteFile(filepath.Join(dir, "tasks", "hello.json"), []byte(strings.Replace(task, `"expected":"hello"`, `"expected":"hel+o"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = c.run("run", dir)
	if code != 0 || !strings.HasPrefix(out, "tasks/hello.json: v2 (changed)\n") {
		t.Errorf("edited folder run: exit %d\n%s", code, out)
	}

	// The folder now exists: a second init into it is refused.
	code, _, stderr = c.run("bundle", "init", dir, "--from-task", "@local/agentenv-framework/hello/hello")
	if code != 1 || !strings.HasPrefix(stderr, "Error: invalid bundle: "+dir+" exists and is not empty") {
		t.Errorf("init into a full folder: exit %d %q", code, stderr)
	}
}

// A pinned reference keeps using the version that was latest at init,
// even after the artifact gets a newer version.
func TestBundleInitPinsVersions(t *testing.T) {
	c := newCLI(t)
	tmp := t.TempDir()
	for _, body := range []string{"one\n", "two\n"} {
		f := writeFile(t, filepath.Join(tmp, "word.txt"), body)
		if code, out, stderr := c.run("artifact", "file", "put", f, "--id", "word"); code != 0 {
			t.Fatalf("put: %s %s", out, stderr)
		}
	}
	tf := writeFile(t, filepath.Join(tmp, "t.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"load","type":"load_artifact","sandbox_name":"box","artifact_id":"word","destination_path":"/app/w"},
	  {"id":"check","type":"verify_sandbox","sandbox_name":"box","base_dir":"/app/w","verifier_id":"is-two",
	   "criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"grep -qx two word.txt"}]}]`)
	if code, out, stderr := c.run("task", "create", tf, "--id", "team/words"); code != 0 {
		t.Fatalf("create: %s %s", out, stderr)
	}
	dir := filepath.Join(tmp, "words")
	code, out, stderr := c.run("bundle", "init", dir, "--from-task", "team/words:1", "--json")
	if code != 0 {
		t.Fatalf("init: exit %d %s %s", code, out, stderr)
	}
	var res struct {
		TaskFile string `json:"task_file"`
		Pinned   []struct {
			StepID  string `json:"step_id"`
			ID      string `json:"id"`
			Version int    `json:"version"`
		} `json:"pinned"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Pinned) != 1 || res.Pinned[0].Version != 2 ||
		res.TaskFile != filepath.Join(dir, "tasks", "words.json") {
		t.Fatalf("init --json: %v\n%s", err, out)
	}
	// word v3 says "three"; the folder still loads v2.
	f := writeFile(t, filepath.Join(tmp, "word.txt"), "three\n")
	if code, _, _ := c.run("artifact", "file", "put", f, "--id", "word"); code != 0 {
		t.Fatal("put v3")
	}
	code, out, _ = c.run("run", dir)
	if code != 0 || !strings.Contains(out, "passed (check: 1)") {
		t.Errorf("folder run with the pinned version: exit %d\n%s", code, out)
	}

	code, _, stderr = c.run("bundle", "init", filepath.Join(tmp, "x"), "--from-task", "nope")
	if code != 1 || stderr != "Error: Task nope version=latest not found\n" {
		t.Errorf("unknown task: exit %d %q", code, stderr)
	}
	code, _, stderr = c.run("bundle", "init", filepath.Join(tmp, "x"))
	if code != 1 || !strings.Contains(stderr, `"from-task" not set`) {
		t.Errorf("no --from-task: exit %d %q", code, stderr)
	}
}

// The acceptance check of the issue: `agent-env run hello` passes twice
// in a row from a fresh state directory, leaves no work folder behind,
// records completed instances with score 1 under the bundle id root, and
// the second run writes no new version or object.
func TestRunHelloTwiceAcceptance(t *testing.T) {
	c := newCLI(t)
	objects := func() []string {
		var out []string
		_ = filepath.WalkDir(filepath.Join(c.stateRoot, "agent-env", "object_store", "artifacts"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	var ids []string
	var firstObjects []string
	for run := 1; run <= 2; run++ {
		code, out, stderr := c.run("run", "hello")
		if code != 0 || stderr != "" {
			t.Fatalf("run %d: exit %d\n%s\n%s", run, code, out, stderr)
		}
		m := instanceRe.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("run %d: no instance line:\n%s", run, out)
		}
		ids = append(ids, m[1])
		if left := c.leftoverSandboxes(); len(left) != 0 {
			t.Errorf("run %d: leftover work folders %v", run, left)
		}
		inst := c.instance(m[1])
		if inst.Status != runner.StatusCompleted || inst.TaskVersion != 1 || len(inst.CompletedSteps) != 3 {
			t.Errorf("run %d: instance %+v", run, inst)
		}
		for _, s := range inst.CompletedSteps {
			if s.Status != "success" {
				t.Errorf("run %d: step %s %s", run, s.StepID, s.Status)
			}
		}
		v, _ := inst.Context["metadata"].(map[string]any)["verifications"].(map[string]any)["hello"].(map[string]any)
		if v == nil || v["score"] != 1.0 {
			t.Errorf("run %d: verification %v", run, v)
		}
		if run == 1 {
			firstObjects = objects()
		} else if got := objects(); strings.Join(got, ",") != strings.Join(firstObjects, ",") {
			t.Errorf("the second run changed the objects: %v -> %v", firstObjects, got)
		}
		if run == 2 && !strings.HasPrefix(out, "artifacts/greeting: v1, unchanged\ntasks/hello.json: v1, unchanged\n") {
			t.Errorf("second run rewrote entities:\n%s", out)
		}
	}
	if ids[0] == ids[1] {
		t.Errorf("both runs share instance id %s", ids[0])
	}
	code, out, _ := c.run("task", "list", "--local")
	if code != 0 || !regexp.MustCompile(`@local/agentenv-framework/hello/hello\s+1\s+3`).MatchString(out) {
		t.Errorf("task list --local:\n%s", out)
	}
}
