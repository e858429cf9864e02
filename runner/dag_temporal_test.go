package runner_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/temporal"
	"github.com/agentenv/agentenv/runner/temporal/temporaltest"
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
	return outputAsLocal(&out)
}

// TestDAGGoldensTemporalServer runs the goldens once more on a real
// Temporal server (the dev server of the real-server tier): each golden's
// workflow and activities run on a worker of their own task queue, so
// history, replay and cancellation go through the server. It is skipped
// without AGENTENV_TEMPORAL_DEVSERVER.
func TestDAGGoldensTemporalServer(t *testing.T) {
	if *update {
		t.Skip("goldens are written by TestDAGGoldens")
	}
	srv := temporaltest.StartServer(t)
	testDAGGoldens(t, func(t *testing.T, r *runner.Runner, p *probe, task *runner.Task, initial map[string]any,
		opts *runner.RunOptions, cancelWhenStarted string) (*runner.Result, error, map[string]any) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		c, err := temporal.Dial(ctx, &temporal.ClientOptions{Address: srv.Address, Namespace: srv.Namespace,
			TaskQueue: "golden-" + strings.ReplaceAll(t.Name(), "/", "-")})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wf := temporal.NewWorkflows(r, nil, &temporal.WorkflowsOptions{
			Hooks: temporal.Hooks{OnStepComplete: opts.OnStepComplete}})
		wctx, stop := context.WithCancel(ctx)
		served := make(chan error, 1)
		go func() {
			served <- temporal.NewWorker(c, wf, &temporal.WorkerOptions{StopTimeout: time.Second}).Run(wctx)
		}()
		defer func() { stop(); <-served }()
		steps, err := task.StepsJSON()
		if err != nil {
			t.Fatal(err)
		}
		id := "golden-" + runner.RandomHex(6)
		if _, err := c.Submit(ctx, temporal.RunInput{TaskID: task.ID, TaskVersion: task.Version, Steps: steps,
			Context: runner.NewRunContext(initial, nil).Snapshot(), InstanceID: id,
			StartStep: opts.StartStep, EndStep: opts.EndStep}); err != nil {
			t.Fatal(err)
		}
		if cancelWhenStarted != "" {
			go func() {
				select {
				case <-p.startedCh(cancelWhenStarted):
					_ = c.Cancel(ctx, id)
				case <-ctx.Done():
				}
			}()
		}
		out, err := c.Wait(ctx, id, nil)
		if err != nil {
			t.Fatalf("run %s: %v", id, err)
		}
		return outputAsLocal(out)
	})
}

// outputAsLocal is a workflow's output in the local runner's terms.
func outputAsLocal(out *temporal.RunOutput) (*runner.Result, error, map[string]any) {
	res, err := out.Result()
	return res, err, out.Context
}
