package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestVersionFlag(t *testing.T) {
	c := newCLI(t)
	code, out, _ := c.run("--version")
	if code != 0 || !regexp.MustCompile(`^agent-env version \S.*\n$`).MatchString(out) {
		t.Errorf("--version: exit %d %q", code, out)
	}
}

// Every command has a one-line summary, and every leaf command's help
// prints its usage and exits 0.
func TestHelpReads(t *testing.T) {
	c := newCLI(t)
	code, out, _ := c.run("--help")
	for _, w := range []string{"artifact", "bundle", "run", "task", "config", "env", "a2a-agent"} {
		if !strings.Contains(out, "  "+w+" ") {
			t.Errorf("root help lacks %q:\n%s", w, out)
		}
	}
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			if strings.TrimSpace(sub.Short) == "" {
				t.Errorf("%s has no Short help", sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk(newRootCmd(c.deps(newSyncBuffer(), newSyncBuffer())))
	for _, args := range [][]string{{"bundle", "init", "--help"}, {"artifact", "file", "put", "--help"}, {"artifact", "environment-universe", "put", "--help"}, {"run", "--help"}} {
		code, out, _ := c.run(args...)
		if code != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, "Flags:") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	_, out, _ = c.run("bundle", "init", "--help")
	if !strings.Contains(out, "Examples:\n  agent-env bundle init ./my-hello --from-task") {
		t.Errorf("bundle init help lacks its example:\n%s", out)
	}
}

func TestJSONOutput(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "t.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"v","type":"verify_sandbox","sandbox_name":"box","verifier_id":"ok","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"true"}]}]`)
	code, out, stderr := c.run("task", "create", f, "--id", "demo", "--json")
	var created struct {
		Saved   bool   `json:"saved"`
		ID      string `json:"id"`
		Version int    `json:"version"`
		Steps   []struct {
			ID, Type string
			Version  int
		} `json:"steps"`
	}
	if code != 0 || stderr != "" || json.Unmarshal([]byte(out), &created) != nil || !created.Saved || created.ID != "demo" ||
		created.Version != 1 || len(created.Steps) != 2 || created.Steps[1].Type != "verify_sandbox" {
		t.Fatalf("task create --json: exit %d\n%s\n%s", code, out, stderr)
	}
	pre := writeFile(t, filepath.Join(dir, "pre.json"), `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"l","type":"load_artifact","sandbox_name":"box","artifact_id":"missing-art"}]`)
	code, out, _ = c.run("task", "create", pre, "--id", "pre", "--json")
	var refused struct {
		Saved    bool     `json:"saved"`
		Problems []string `json:"problems"`
	}
	if code != 1 || json.Unmarshal([]byte(out), &refused) != nil || refused.Saved || len(refused.Problems) != 1 ||
		!strings.Contains(refused.Problems[0], "missing-art") {
		t.Errorf("preflight --json: exit %d\n%s", code, out)
	}

	code, out, stderr = c.run("run", "hello", "--json")
	var rep struct {
		Bundle   string                              `json:"bundle"`
		Entities []struct{ Path, ID, Status string } `json:"entities"`
		Tasks    []struct {
			File       string `json:"file"`
			Outcome    string `json:"outcome"`
			InstanceID string `json:"instance_id"`
			Status     string `json:"status"`
			Scores     []struct {
				VerifierID string  `json:"verifier_id"`
				Score      float64 `json:"score"`
			} `json:"scores"`
		} `json:"tasks"`
		TornDown int  `json:"torn_down"`
		Failed   bool `json:"failed"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("run --json: exit %d\n%s\n%s", code, out, stderr)
	}
	if rep.Bundle != "@local/agentenv-framework/hello" || len(rep.Entities) != 2 || len(rep.Tasks) != 1 || rep.Tasks[0].Outcome != "passed" ||
		rep.Tasks[0].Status != "completed" || len(rep.Tasks[0].Scores) != 1 || rep.Tasks[0].Scores[0].Score != 1 || rep.TornDown != 1 || rep.Failed {
		t.Errorf("run --json report: %+v", rep)
	}
	if !strings.Contains(stderr, "[tasks/hello.json] step 1/3 box (deploy_sandbox)") || !strings.Contains(stderr, "Tore down 1 sandbox.") {
		t.Errorf("run --json: the step lines belong on stderr:\n%s", stderr)
	}
	code, out, _ = c.run("task", "get-instance", "--id", rep.Tasks[0].InstanceID, "--json")
	var inst struct {
		InstanceID string         `json:"instance_id"`
		Status     string         `json:"status"`
		Context    map[string]any `json:"context"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &inst) != nil || inst.InstanceID != rep.Tasks[0].InstanceID || inst.Status != "completed" || inst.Context == nil {
		t.Errorf("get-instance --json: exit %d\n%s", code, out)
	}
	code, _, stderr = c.run("run", "hello", "--json", "--keep")
	if code != 1 || stderr != "Error: --json cannot be combined with --keep or --dry-run\n" {
		t.Errorf("--json --keep: exit %d %q", code, stderr)
	}
}

// task run --version picks a version; --output-dir is where the context
// file goes.
func TestTaskRunVersion(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	for _, cmd := range []string{"test 1 = 1", "test 1 = 2"} {
		f := writeFile(t, filepath.Join(dir, "t.json"), `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
		  {"id":"v","type":"verify_sandbox","sandbox_name":"box","verifier_id":"v","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"`+cmd+`"}]}]`)
		if code, out, stderr := c.run("task", "create", f, "--id", "twice"); code != 0 {
			t.Fatalf("%s %s", out, stderr)
		}
	}
	out1 := filepath.Join(dir, "o1")
	code, out, _ := c.run("task", "run", "--id", "twice", "--version", "1", "--output-dir", out1)
	if code != 0 || !strings.Contains(out, "Fetching task: id=twice version=1...\nFound task: id=twice version=1 steps=2\n") ||
		!strings.Contains(out, "score (verifier_id=v): 1\n") || !strings.Contains(out, "Task context written to: "+out1+"/twice_") {
		t.Errorf("--version 1: exit %d\n%s", code, out)
	}
	code, out, _ = c.run("task", "run", "--id", "twice", "--output-dir", filepath.Join(dir, "o2"))
	if code != 0 || !strings.Contains(out, "Found task: id=twice version=2 steps=2\n") || !strings.Contains(out, "score (verifier_id=v): 0\n") {
		t.Errorf("latest: exit %d\n%s", code, out)
	}
	code, _, stderr := c.run("task", "run", "--id", "twice", "--version", "3")
	if code != 1 || stderr != "Error: Task twice version=3 not found\n" {
		t.Errorf("--version 3: exit %d %q", code, stderr)
	}
}

// Duplicate step ids are refused at task create naming the step and the
// field (the other bad-input cases are in TestBadInput).
func TestTaskCreateDuplicateID(t *testing.T) {
	c := newCLI(t)
	f := writeFile(t, filepath.Join(t.TempDir(), "dup.json"), `[{"id":"a","type":"deploy_sandbox","sandbox_name":"a","sandbox_mode":"vm"},
	  {"id":"a","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"vm"}]`)
	code, _, stderr := c.run("task", "create", f, "--id", "dup")
	if code != 1 || stderr != "Error: step 2 (id \"a\"): field \"id\": duplicate step id: also used by step 1\n" {
		t.Errorf("exit %d %q", code, stderr)
	}
}
