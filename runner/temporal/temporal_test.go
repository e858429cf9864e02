package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/local"
	"github.com/agentenv/agentenv/runner/temporal"
)

// boxStep creates a local sandbox named after the step and records it;
// with block it then waits for cancellation.
type boxStep struct {
	Block   bool `json:"block"`
	started chan string
}

func (s *boxStep) Run(ctx context.Context, rc *runner.RunContext) error {
	sb, err := rc.Services().CreateSandbox(ctx, "local", sandbox.Spec{Name: rc.StepID(), Mode: sandbox.ModeVM})
	if err != nil {
		return err
	}
	h := sb.Handle()
	if err := rc.AddSandbox(runner.DeployedSandbox{SandboxName: rc.StepID(), SandboxID: sb.ID(),
		SandboxType: sb.Type(), Handle: &h}, sb); err != nil {
		return err
	}
	if s.Block {
		s.started <- rc.StepID()
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

type fixture struct {
	env     *testsuite.TestWorkflowEnvironment
	root    string
	started chan string
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{root: t.TempDir(), started: make(chan string, 4)}
	reg := runner.NewStepRegistry()
	reg.Register(runner.StepInfo{Type: "box", New: func() runner.Step { return &boxStep{started: f.started} }})
	r := runner.New(&runner.Options{Steps: reg})
	svc := &runner.Services{Sandboxes: map[string]runner.SandboxProvider{"local": local.New(f.root, nil)}}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	f.env = suite.NewTestWorkflowEnvironment()
	f.env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	f.env.SetTestTimeout(2 * time.Minute)
	temporal.NewWorkflows(r, svc, &temporal.WorkflowsOptions{HeartbeatInterval: 50 * time.Millisecond}).Register(f.env)
	return f
}

func (f *fixture) run(t *testing.T, steps string) *temporal.RunOutput {
	t.Helper()
	f.env.ExecuteWorkflow(temporal.WorkflowName, temporal.RunInput{TaskID: "t", Steps: []byte(steps),
		Context: runner.NewRunContext(nil, nil).Snapshot(), InstanceID: "t-1"})
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var out temporal.RunOutput
	if err := f.env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// left lists the work folders still under the provider's root.
func (f *fixture) left(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(f.root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestRunTearsDownSandboxes: sandboxes created by steps on the worker are
// recorded in the context (metadata.sandbox_handles) and torn down when
// the run ends.
func TestRunTearsDownSandboxes(t *testing.T) {
	f := newFixture(t)
	out := f.run(t, `[{"id":"a","type":"box"},{"id":"b","type":"box"}]`)
	if out.Status != runner.StatusCompleted {
		t.Fatalf("status %s: %s", out.Status, out.Error)
	}
	md := out.Context["metadata"].(map[string]any)
	if hs, _ := md["sandbox_handles"].([]any); len(hs) != 2 {
		t.Errorf("metadata.sandbox_handles = %v, want 2 handles", md["sandbox_handles"])
	}
	if out.TornDown != 2 {
		t.Errorf("torn down %d sandboxes, want 2", out.TornDown)
	}
	if left := f.left(t); len(left) != 0 {
		t.Errorf("work folders left behind: %v", left)
	}
}

// TestCancelTearsDownSandboxes: cancelling a run stops its running step
// and tears down every sandbox, including the running step's own.
func TestCancelTearsDownSandboxes(t *testing.T) {
	f := newFixture(t)
	go func() {
		<-f.started
		f.env.CancelWorkflow()
	}()
	out := f.run(t, `[{"id":"a","type":"box"},{"id":"hang","type":"box","block":true},{"id":"never","type":"box"}]`)
	if out.Status != runner.StatusCancelled {
		t.Fatalf("status %s, want cancelled", out.Status)
	}
	if out.TornDown < 1 {
		t.Errorf("torn down %d sandboxes, want at least step a's", out.TornDown)
	}
	// The test environment hands the workflow the cancellation before the
	// cancelled activity has returned; the activity tears its own sandbox
	// down as it returns, so wait for that (bounded) rather than race it.
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for len(f.left(t)) != 0 && time.Now().Before(deadline) {
		<-tick.C
	}
	if left := f.left(t); len(left) != 0 {
		t.Errorf("work folders left behind: %v", left)
	}
}

// TestInvalidTaskFailsTheWorkflow: a task the workers cannot parse fails
// at once, without retries.
func TestInvalidTaskFailsTheWorkflow(t *testing.T) {
	f := newFixture(t)
	f.env.ExecuteWorkflow(temporal.WorkflowName, temporal.RunInput{TaskID: "t", Steps: []byte(`[{"id":"a","type":"nope"}]`)})
	err := f.env.GetWorkflowError()
	if err == nil {
		t.Fatal("an unknown step type ran")
	}
}

// TestDialUnreachable: a server that does not answer fails at Dial with
// ErrUnreachable, naming the address.
func TestDialUnreachable(t *testing.T) {
	_, err := temporal.Dial(context.Background(), &temporal.ClientOptions{Address: "127.0.0.1:1", DialTimeout: 2 * time.Second})
	if !errors.Is(err, temporal.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	if want := "127.0.0.1:1"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
}

// lostFixture is a fixture whose RunStep activity, on the attempts lost
// says, creates a sandbox carrying the step's labels and fails without
// reporting it: a worker killed after a create, before its heartbeat left.
func lostFixture(t *testing.T, lost func(attempt int32) bool) *fixture {
	f := &fixture{root: t.TempDir(), started: make(chan string, 4)}
	reg := runner.NewStepRegistry()
	reg.Register(runner.StepInfo{Type: "box", New: func() runner.Step { return &boxStep{started: f.started} }})
	prov := local.New(f.root, nil)
	svc := &runner.Services{Sandboxes: map[string]runner.SandboxProvider{"local": prov}}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	f.env = suite.NewTestWorkflowEnvironment()
	f.env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	f.env.SetTestTimeout(2 * time.Minute)
	w := temporal.NewWorkflows(runner.New(&runner.Options{Steps: reg}), svc, &temporal.WorkflowsOptions{HeartbeatInterval: 50 * time.Millisecond})
	f.env.RegisterWorkflowWithOptions(w.RunTask, workflow.RegisterOptions{Name: temporal.WorkflowName})
	f.env.RegisterActivityWithOptions(w.Terminate, activity.RegisterOptions{Name: temporal.ActivityTerminate})
	f.env.RegisterActivityWithOptions(w.Sweep, activity.RegisterOptions{Name: temporal.ActivitySweep})
	f.env.RegisterActivityWithOptions(func(ctx context.Context, in temporal.StepInput) (*temporal.StepOutput, error) {
		info := activity.GetInfo(ctx)
		if !lost(info.Attempt) {
			return w.RunStep(ctx, in)
		}
		var steps []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(in.Steps, &steps); err != nil {
			return nil, err
		}
		_, err := prov.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeVM, Labels: map[string]string{
			temporal.LabelRun: info.WorkflowExecution.RunID, temporal.LabelStep: steps[in.Index].ID}})
		if err != nil {
			return nil, err
		}
		return nil, errors.New("worker lost")
	}, activity.RegisterOptions{Name: temporal.ActivityRunStep})
	return f
}

// A step whose first attempt created a sandbox and died before reporting
// it: the retry sweeps the step's labels, so only the retry's own sandbox
// exists, and the run's teardown leaves nothing.
func TestRetrySweepsUnreportedSandbox(t *testing.T) {
	f := lostFixture(t, func(attempt int32) bool { return attempt == 1 })
	out := f.run(t, `[{"id":"a","type":"box"},{"id":"b","type":"box"}]`)
	if out.Status != runner.StatusCompleted {
		t.Fatalf("status %s: %s", out.Status, out.Error)
	}
	if out.TornDown != 2 {
		t.Errorf("torn down %d sandboxes, want the 2 the steps reported", out.TornDown)
	}
	if left := f.left(t); len(left) != 0 {
		t.Errorf("work folders left behind: %v", left)
	}
}

// A step lost on every attempt: the run fails, and its teardown sweeps the
// run's labels, so the sandboxes nobody reported go too.
func TestLostStepIsSwept(t *testing.T) {
	f := lostFixture(t, func(int32) bool { return true })
	f.env.ExecuteWorkflow(temporal.WorkflowName, temporal.RunInput{TaskID: "t", Steps: []byte(`[{"id":"a","type":"box"}]`),
		Context: runner.NewRunContext(nil, nil).Snapshot(), InstanceID: "t-1", StepAttempts: 2})
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var out temporal.RunOutput
	if err := f.env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.Status != runner.StatusFailed || !strings.Contains(out.Error, "worker lost") {
		t.Errorf("status %s (%s), want failed with the lost worker's error", out.Status, out.Error)
	}
	if left := f.left(t); len(left) != 0 {
		t.Errorf("work folders left behind: %v", left)
	}
}
