package runner_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/temporal"
)

// TestDAGGoldensTemporal runs the same goldens as TestDAGGoldens on the
// Temporal runner: the task is a workflow and each step an activity, in
// the SDK's test environment, with the same expected summaries.
func TestDAGGoldensTemporal(t *testing.T) {
	if *update {
		t.Skip("goldens are written by TestDAGGoldens")
	}
	testDAGGoldens(t, runTemporal)
}

func runTemporal(t *testing.T, r *runner.Runner, p *probe, task *runner.Task, initial map[string]any,
	opts *runner.RunOptions, cancelWhenStarted string) (*runner.Result, error, map[string]any) {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	// The workflow's own code is quick, but a loaded 2-core machine can
	// stall it past the SDK's 1 s deadlock detector and 3 s test timeout.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	env.SetTestTimeout(2 * time.Minute)
	wf := temporal.NewWorkflows(r, nil, &temporal.WorkflowsOptions{
		Hooks: temporal.Hooks{OnStepComplete: opts.OnStepComplete}})
	wf.Register(env)
	if cancelWhenStarted != "" {
		go func() {
			<-p.startedCh(cancelWhenStarted)
			env.CancelWorkflow()
		}()
	}
	steps, err := task.StepsJSON()
	if err != nil {
		t.Fatal(err)
	}
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.RunInput{TaskID: task.ID, TaskVersion: task.Version,
		Steps: steps, Context: runner.NewRunContext(initial, nil).Snapshot(), InstanceID: "golden",
		StartStep: opts.StartStep, EndStep: opts.EndStep})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var out temporal.RunOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	res := &runner.Result{Status: out.Status, Failed: out.Failed}
	for _, l := range out.Ledger {
		e := runner.LedgerEntry{StepID: l.StepID, Attempt: l.Attempt, Outcome: l.Outcome}
		if l.Error != "" {
			e.Err = errors.New(l.Error)
		}
		res.Ledger = append(res.Ledger, e)
	}
	var runErr error
	if out.Error != "" {
		runErr = errors.New(out.Error)
	}
	return res, runErr, out.Context
}
