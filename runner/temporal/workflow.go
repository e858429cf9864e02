package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// Registered names: stable, since running workflows refer to them.
const (
	WorkflowName         = "agentenv.RunTask"
	ActivityRunStep      = "agentenv.RunStep"
	ActivityTerminate    = "agentenv.TerminateSandboxes"
	ActivitySweep        = "agentenv.SweepSandboxes"
	QueryProgress        = "agentenv.progress"
	metaSandboxHandles   = "sandbox_handles"
	defaultHeartbeat     = 30 * time.Second
	defaultStepTimeout   = 24 * time.Hour
	defaultStepAttempts  = 5
	terminateStepTimeout = 10 * time.Minute
)

// RunInput is a workflow's input: everything a run needs, as data.
type RunInput struct {
	TaskID      string          `json:"task_id"`
	TaskVersion int             `json:"task_version"`
	Steps       json.RawMessage `json:"steps"`
	// Context is the initial context document (its metadata carries
	// task_id, instance_id and run_group_id, set by the submitter).
	Context    map[string]any `json:"context"`
	InstanceID string         `json:"instance_id"`
	StartStep  int            `json:"start_step,omitempty"`
	EndStep    int            `json:"end_step,omitempty"`
	// KeepSandboxes leaves the run's sandboxes up at the end; the default
	// tears them down, since no local process is left to do it.
	KeepSandboxes bool `json:"keep_sandboxes,omitempty"`
	// HeartbeatTimeout is how long a worker may go silent before its step
	// is retried elsewhere; 0 means 30 s.
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	// StepAttempts bounds the re-executions of one step after worker
	// losses (not step failures: those follow retry_config); 0 means 5.
	StepAttempts int `json:"step_attempts,omitempty"`
}

// LedgerLine is one runner.LedgerEntry as data.
type LedgerLine struct {
	StepID  string `json:"step_id"`
	Attempt int    `json:"attempt"`
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// RunOutput is a finished workflow's result.
type RunOutput struct {
	InstanceID string              `json:"instance_id"`
	Status     string              `json:"status"`
	Error      string              `json:"error,omitempty"`
	Ledger     []LedgerLine        `json:"ledger"`
	Failed     []runner.FailedStep `json:"failed_steps,omitempty"`
	// Context is the final context without secrets (SafeSnapshot).
	Context  map[string]any `json:"context"`
	TornDown int            `json:"torn_down"`
}

// Result is the output as the local runner reports a run: its result,
// and the run's error when it did not complete.
func (o *RunOutput) Result() (*runner.Result, error) {
	res := &runner.Result{Status: o.Status, Failed: o.Failed}
	for _, l := range o.Ledger {
		e := runner.LedgerEntry{StepID: l.StepID, Attempt: l.Attempt, Outcome: l.Outcome}
		if l.Error != "" {
			e.Err = errors.New(l.Error)
		}
		res.Ledger = append(res.Ledger, e)
	}
	if o.Error != "" {
		return res, errors.New(o.Error)
	}
	return res, nil
}

// Progress is what QueryProgress answers while a run goes on.
type Progress struct {
	Total   int          `json:"total"`
	Running []string     `json:"running"`
	Ended   []LedgerLine `json:"ended"`
}

// StepInput is the RunStep activity's input.
type StepInput struct {
	WorkflowID string          `json:"workflow_id"`
	Steps      json.RawMessage `json:"steps"`
	Index      int             `json:"index"`
	Context    map[string]any  `json:"context"`
	Seed       map[string]string
}

// StepOutput is the RunStep activity's result. A step's own failure is
// data here (Err), not an activity error: the DAG scheduler, not
// Temporal, decides what a failed step means. Activity errors are kept
// for losing the worker.
type StepOutput struct {
	Ops     runner.Ops       `json:"ops"`
	Err     string           `json:"error,omitempty"`
	ErrType string           `json:"error_type,omitempty"`
	Created []sandbox.Handle `json:"created,omitempty"`
}

// stepError carries a remote step's error text and error_type.
type stepError struct{ msg, kind string }

func (e *stepError) Error() string { return e.msg }
func (e *stepError) Kind() string  { return e.kind }

// Hooks observe a workflow's scheduler from the worker's process. They are
// side effects outside Temporal's replay, so only in-process uses (tests,
// local progress) belong here.
type Hooks struct {
	OnStepStart    func(index, total int, d *runner.StepDef)
	OnStepComplete func(index, total int, d *runner.StepDef, seconds float64, err error)
}

// RunTask is the workflow: it runs the task's DAG with steps as
// activities, then tears the run's sandboxes down (unless kept).
func (w *Workflows) RunTask(ctx workflow.Context, in RunInput) (*RunOutput, error) {
	task, err := w.r.ParseTask(in.TaskID, in.TaskVersion, in.Steps)
	if err != nil {
		return nil, sdktemporal.NewNonRetryableApplicationError(err.Error(), "InvalidTask", err)
	}
	rc := runner.NewRunContext(in.Context, nil)
	ex := &wfExecutor{ctx: ctx, in: &in, ch: workflow.NewChannel(ctx), rc: rc}
	prog := &Progress{Total: len(task.Steps), Running: []string{}, Ended: []LedgerLine{}}
	if err := workflow.SetQueryHandler(ctx, QueryProgress, func() (*Progress, error) { return prog, nil }); err != nil {
		return nil, err
	}
	opts := &runner.RunOptions{StartStep: in.StartStep, EndStep: in.EndStep,
		OnStepStart: func(i, n int, d *runner.StepDef) {
			prog.Running = append(prog.Running, d.ID)
			if w.hooks.OnStepStart != nil {
				w.hooks.OnStepStart(i, n, d)
			}
		},
		OnStepComplete: func(i, n int, d *runner.StepDef, secs float64, err error) {
			for k, id := range prog.Running {
				if id == d.ID {
					prog.Running = append(prog.Running[:k], prog.Running[k+1:]...)
					break
				}
			}
			l := LedgerLine{StepID: d.ID, Outcome: runner.OutcomeSuccess}
			if err != nil {
				l.Outcome, l.Error = "failure", err.Error()
			}
			prog.Ended = append(prog.Ended, l)
			if w.hooks.OnStepComplete != nil {
				w.hooks.OnStepComplete(i, n, d, secs, err)
			}
		}}
	res, runErr := w.r.RunDAG(task, rc, opts, ex)
	out := &RunOutput{InstanceID: in.InstanceID, Status: res.Status, Failed: res.Failed, Ledger: []LedgerLine{}}
	for _, e := range res.Ledger {
		l := LedgerLine{StepID: e.StepID, Attempt: e.Attempt, Outcome: e.Outcome}
		if e.Err != nil {
			l.Error = e.Err.Error()
		}
		out.Ledger = append(out.Ledger, l)
	}
	if runErr != nil {
		out.Error = runErr.Error()
		if res.Status == runner.StatusCancelled {
			// The local runner's words for an interrupt.
			out.Error = context.Canceled.Error()
		}
	}
	if !in.KeepSandboxes {
		out.TornDown = ex.teardown(nil)
		ex.sweepLost()
	}
	out.Context = rc.SafeSnapshot()
	return out, nil
}

// wfExecutor is the workflow-side runner.Executor: Start schedules a
// RunStep activity on a workflow coroutine, whose result is applied to the
// workflow's context before the scheduler sees the step end.
type wfExecutor struct {
	ctx workflow.Context
	in  *RunInput
	ch  workflow.Channel
	rc  *runner.RunContext
	// lost is set when a step's activity ended without its result (retries
	// exhausted, timed out, cancelled): what it created may be unrecorded.
	lost bool
}

type stepDone struct {
	Index int
	Out   StepOutput
	Err   error
}

func (e *wfExecutor) Now() time.Time { return workflow.Now(e.ctx) }
func (e *wfExecutor) Err() error     { return e.ctx.Err() }

func (e *wfExecutor) activityOptions() workflow.ActivityOptions {
	hb := e.in.HeartbeatTimeout
	if hb <= 0 {
		hb = defaultHeartbeat
	}
	attempts := e.in.StepAttempts
	if attempts <= 0 {
		attempts = defaultStepAttempts
	}
	return workflow.ActivityOptions{
		StartToCloseTimeout: defaultStepTimeout,
		HeartbeatTimeout:    hb,
		// The step's own cleanup and its sandboxes' records come back
		// after a cancellation, so the workflow waits for them.
		WaitForCancellation: true,
		RetryPolicy: &sdktemporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: 30 * time.Second, MaximumAttempts: int32(attempts)},
	}
}

func (e *wfExecutor) Start(i int, d *runner.StepDef, rc *runner.RunContext, seed map[string]string) {
	in := StepInput{WorkflowID: workflow.GetInfo(e.ctx).WorkflowExecution.ID, Steps: e.in.Steps,
		Index: i, Context: rc.Snapshot(), Seed: seed}
	actx := workflow.WithActivityOptions(e.ctx, e.activityOptions())
	fut := workflow.ExecuteActivity(actx, ActivityRunStep, in)
	workflow.Go(e.ctx, func(gctx workflow.Context) {
		var out StepOutput
		err := fut.Get(gctx, &out)
		dctx, _ := workflow.NewDisconnectedContext(gctx)
		e.ch.Send(dctx, stepDone{Index: i, Out: out, Err: err})
	})
}

func (e *wfExecutor) deliver(d stepDone) runner.StepEnd {
	e.record(d.Out.Created)
	e.rc.Apply(d.Out.Ops)
	if d.Err != nil {
		e.lost = true
	}
	switch {
	case d.Err != nil:
		var ce *sdktemporal.CanceledError
		if errors.As(d.Err, &ce) {
			return runner.StepEnd{Index: d.Index, Err: &stepError{msg: "context canceled", kind: "Cancelled"}}
		}
		return runner.StepEnd{Index: d.Index, Err: fmt.Errorf("step lost on its workers: %w", d.Err)}
	case d.Out.Err != "":
		return runner.StepEnd{Index: d.Index, Err: &stepError{msg: d.Out.Err, kind: d.Out.ErrType}}
	}
	return runner.StepEnd{Index: d.Index}
}

func (e *wfExecutor) Next() runner.StepEnd {
	var d stepDone
	dctx, _ := workflow.NewDisconnectedContext(e.ctx)
	e.ch.Receive(dctx, &d)
	return e.deliver(d)
}

func (e *wfExecutor) TryNext() (runner.StepEnd, bool) {
	var d stepDone
	if !e.ch.ReceiveAsync(&d) {
		return runner.StepEnd{}, false
	}
	return e.deliver(d), true
}

// record adds handles to metadata.sandbox_handles (once each).
func (e *wfExecutor) record(hs []sandbox.Handle) {
	if len(hs) == 0 {
		return
	}
	have := e.handles()
	for _, h := range hs {
		if _, ok := have[h.ID]; !ok {
			e.rc.AppendMetadata(metaSandboxHandles, h)
			have[h.ID] = h
		}
	}
}

// handles is every sandbox handle the run knows: the recorded ones and
// those in deployed_sandboxes, by id.
func (e *wfExecutor) handles() map[string]sandbox.Handle {
	out := map[string]sandbox.Handle{}
	v, _ := e.rc.Metadata(metaSandboxHandles)
	var hs []sandbox.Handle
	if b, err := json.Marshal(v); err == nil {
		_ = json.Unmarshal(b, &hs)
	}
	for _, h := range hs {
		out[h.ID] = h
	}
	for _, ds := range e.rc.Sandboxes() {
		if ds.Handle != nil {
			out[ds.SandboxID] = *ds.Handle
		}
	}
	return out
}

func (e *wfExecutor) torn() map[string]bool {
	v, _ := e.rc.Metadata("torn_down_sandbox_ids")
	l, _ := v.([]any)
	out := map[string]bool{}
	for _, id := range l {
		if s, ok := id.(string); ok {
			out[s] = true
		}
	}
	return out
}

// TerminateSandbox implements runner.Executor for retry rollback.
func (e *wfExecutor) TerminateSandbox(rc *runner.RunContext, id string) error {
	h, ok := e.handles()[id]
	if !ok {
		return fmt.Errorf("sandbox %s has no recorded handle", id)
	}
	if _, err := e.terminate([]sandbox.Handle{h}); err != nil {
		return err
	}
	rc.MarkTornDown(id)
	return nil
}

// teardown terminates every recorded sandbox not yet torn down (only
// those, when ids is not nil) and returns how many went.
func (e *wfExecutor) teardown(ids []string) int {
	all, torn := e.handles(), e.torn()
	var hs []sandbox.Handle
	for id, h := range all {
		if !torn[id] && (ids == nil || contains(ids, id)) {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return 0
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].ID < hs[j].ID })
	done, err := e.terminate(hs)
	if err != nil {
		workflow.GetLogger(e.ctx).Warn("teardown failed", "error", err)
	}
	for _, id := range done {
		e.rc.MarkTornDown(id)
	}
	return len(done)
}

// sweepLost sweeps the run's labels when a step's activity was lost: a
// sandbox its attempt created but never reported has no handle to tear
// down by.
func (e *wfExecutor) sweepLost() {
	if !e.lost {
		return
	}
	ctx := e.cleanupContext()
	var swept []string
	labels := stepLabels(workflow.GetInfo(e.ctx).WorkflowExecution.RunID, "")
	if err := workflow.ExecuteActivity(ctx, ActivitySweep, labels).Get(ctx, &swept); err != nil {
		workflow.GetLogger(e.ctx).Warn("sweep after a lost step failed", "error", err)
	}
	for _, id := range swept {
		e.rc.MarkTornDown(id)
	}
}

// terminate runs the TerminateSandboxes activity, even when the run is
// cancelled, and returns the ids that are gone.
func (e *wfExecutor) terminate(hs []sandbox.Handle) ([]string, error) {
	ctx := e.cleanupContext()
	var done []string
	err := workflow.ExecuteActivity(ctx, ActivityTerminate, hs).Get(ctx, &done)
	return done, err
}

// cleanupContext is for the teardown activities: they run even when the
// run is cancelled.
func (e *wfExecutor) cleanupContext() workflow.Context {
	dctx, _ := workflow.NewDisconnectedContext(e.ctx)
	return workflow.WithActivityOptions(dctx, workflow.ActivityOptions{
		StartToCloseTimeout: terminateStepTimeout,
		RetryPolicy:         &sdktemporal.RetryPolicy{MaximumAttempts: 5},
	})
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}
