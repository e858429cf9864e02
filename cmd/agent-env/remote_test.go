package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

// A run bound for remote workers that would use the local-only process
// provider is refused before submit, naming the step.
func TestRefuseLocalOnly(t *testing.T) {
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	task, err := r.ParseTask("t", 1, []byte(`[{"id":"box","type":"deploy_sandbox","sandbox_name":"s","sandbox_mode":"vm"}]`))
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.NewRunContext(map[string]any{"metadata": map[string]any{
		"user_overrides": map[string]any{"sandbox": "process"}}}, nil)
	err = refuseLocalOnly(task, rc, "local")
	if err == nil || !strings.Contains(err.Error(), `id "box"`) || !strings.Contains(err.Error(), `"process"`) {
		t.Fatalf("err = %v, want a refusal naming step box and the process provider", err)
	}
	if err := refuseLocalOnly(task, runner.NewRunContext(nil, nil), "local"); err != nil {
		t.Fatalf("a local default was refused: %v", err)
	}
}

// Refusal follows the provider each step declares (runner.SandboxUser),
// not field names: a sandbox merely named "process" is no provider, while
// a deploy step's sandbox_type or the run's default is.
func TestRefuseLocalOnlyByDeclaredProvider(t *testing.T) {
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	task, err := r.ParseTask("t", 1, []byte(`[
		{"id":"box","type":"deploy_sandbox","sandbox_name":"process","sandbox_mode":"vm","sandbox_type":"local"},
		{"id":"load","type":"load_artifact","sandbox_name":"process","artifact_id":"a","destination_path":"/app/a"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if err := refuseLocalOnly(task, runner.NewRunContext(nil, nil), "local"); err != nil {
		t.Fatalf("a sandbox named process on the local provider was refused: %v", err)
	}
	if err := refuseLocalOnly(task, runner.NewRunContext(nil, nil), "process"); err != nil {
		t.Fatalf("a step with its own sandbox_type was refused for the run's default: %v", err)
	}
	task, err = r.ParseTask("t", 1, []byte(`[
		{"id":"load","type":"load_artifact","sandbox_name":"s","artifact_id":"a","destination_path":"/app/a"},
		{"id":"box","type":"deploy_sandbox","sandbox_name":"s","sandbox_mode":"vm","sandbox_type":"local,process"}]`))
	if err != nil {
		t.Fatal(err)
	}
	err = refuseLocalOnly(task, runner.NewRunContext(nil, nil), "local")
	if err == nil || !strings.Contains(err.Error(), `step 2 (id "box", deploy_sandbox)`) || !strings.Contains(err.Error(), `"process"`) {
		t.Fatalf("err = %v, want a refusal naming step 2 (box) and the process provider", err)
	}
}

// An unreachable Temporal server fails at submit, naming the address and
// the config key, before any run is submitted: for task run and eval run.
func TestTemporalUnreachableAtSubmit(t *testing.T) {
	c := newCLI(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing answers there now
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "t.json"), slotSteps(dir, "quick", -1))
	if code, out, errs := c.run("task", "create", filepath.Join(dir, "t.json"), "--id", "quick"); code != 0 {
		t.Fatalf("task create: %d\n%s%s", code, out, errs)
	}
	writeFile(t, filepath.Join(dir, "e.json"), `[{"task_id":"quick"}]`)
	if code, out, errs := c.run("eval", "create", filepath.Join(dir, "e.json"), "--id", "e"); code != 0 {
		t.Fatalf("eval create: %d\n%s%s", code, out, errs)
	}
	t.Setenv("AGENT_ENV_RUNNER", "temporal")
	t.Setenv("AGENT_ENV_TEMPORAL_ADDRESS", addr)
	// The default output folder (os.TempDir()/taskid=quick-run<hex>) must
	// not be left behind by a run that never started.
	outDirs := func() []string {
		m, _ := filepath.Glob(filepath.Join(os.TempDir(), "taskid=quick-run*"))
		return m
	}
	before := outDirs()
	for _, args := range [][]string{{"task", "run", "quick"}, {"eval", "run", "--id", "e"}} {
		code, out, errs := c.run(args...)
		if code == 0 || !strings.Contains(errs, "temporal server unreachable at "+addr) || !strings.Contains(errs, "[runner.temporal] address") {
			t.Errorf("%v with nothing at %s: exit %d\n%s%s", args, addr, code, out, errs)
		}
		if strings.Contains(out, "Submitted run") || strings.Contains(out+errs, "run 1/1") {
			t.Errorf("%v submitted or ran with no server:\n%s%s", args, out, errs)
		}
	}
	if after := outDirs(); len(after) != len(before) {
		t.Errorf("a refused submit left its output folder: %v (before: %v)", after, before)
	}
}
