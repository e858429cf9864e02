package runner_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
)

type panicStep struct{}

func (*panicStep) Run(context.Context, *runner.RunContext) error { panic("boom") }

// A step that panics fails that step, not the process: a fatal panic fails
// the run (recorded in failed_steps and the instance), a tolerated one
// lets the dependents run.
func TestStepPanicFailsOnlyTheStep(t *testing.T) {
	reg := runner.NewStepRegistry()
	reg.Register(runner.StepInfo{Type: "panic", New: func() runner.Step { return &panicStep{} }})
	reg.Register(runner.StepInfo{Type: "noop", New: func() runner.Step { return &noop{} }})
	r := runner.New(&runner.Options{Steps: reg})
	docs, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer docs.Close()

	fatal, err := r.ParseTask("panics", 1, []byte(`[{"id":"a","type":"noop"},{"id":"p","type":"panic"},{"id":"after","type":"noop"}]`))
	if err != nil {
		t.Fatal(err)
	}
	id := registry.NewInstanceID("panics")
	res, err := r.Run(context.Background(), fatal, runner.NewRunContext(nil, nil), &runner.RunOptions{Documents: docs, InstanceID: id})
	if err == nil || !strings.Contains(err.Error(), "step panicked: boom") || res.Status != runner.StatusFailed {
		t.Fatalf("fatal panic: err %v, result %+v", err, res)
	}
	if len(res.Failed) != 1 || res.Failed[0].StepID != "p" || !res.Failed[0].IsFatal || !strings.Contains(res.Failed[0].Error, "boom") {
		t.Errorf("failed steps: %+v", res.Failed)
	}
	for _, e := range res.Ledger {
		if e.StepID == "after" {
			t.Errorf("a step after a fatal panic ran: %+v", e)
		}
	}
	inst, err := runner.GetInstance(context.Background(), docs, id)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Status != runner.StatusFailed || inst.Error == nil || !strings.Contains(*inst.Error, "step panicked: boom") {
		t.Errorf("instance: %s %v", inst.Status, inst.Error)
	}

	tolerated, err := r.ParseTask("panics-ok", 1, []byte(`[{"id":"p","type":"panic","fail_task_on_error":false},{"id":"after","type":"noop"}]`))
	if err != nil {
		t.Fatal(err)
	}
	res, err = r.Run(context.Background(), tolerated, runner.NewRunContext(nil, nil), nil)
	if err != nil || res.Status != runner.StatusCompleted || len(res.Failed) != 1 || res.Failed[0].IsFatal {
		t.Fatalf("tolerated panic: err %v, result %+v", err, res)
	}
	ran := false
	for _, e := range res.Ledger {
		ran = ran || (e.StepID == "after" && e.Err == nil)
	}
	if !ran {
		t.Errorf("the dependent of a tolerated panic did not run: %+v", res.Ledger)
	}
}
