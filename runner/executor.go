package runner

import (
	"context"
	"fmt"
	"time"
)

// Executor runs the steps the DAG scheduler launches and reports their
// ends. The scheduling itself (readiness, tolerated and fatal failures,
// retry spans and their rollback, cancellation) lives in the scheduler and
// is shared by every executor, so a distributed runner keeps exactly the
// local semantics: only where a step runs and how its changes reach the
// run context differ.
//
// The scheduler calls every method from one goroutine (or one workflow
// coroutine); an executor need not be safe for concurrent use.
type Executor interface {
	// Now is the scheduler's clock (step start and end times, the retry
	// overlap check). A workflow passes its deterministic clock.
	Now() time.Time
	// Err is non-nil once the run is interrupted: no new step starts and
	// failures count as cancelled.
	Err() error
	// Start runs step index (d) against rc without blocking. When it ends,
	// its changes must be in rc before Next or TryNext reports it.
	Start(index int, d *StepDef, rc *RunContext, seed map[string]string)
	// Next blocks until a started step ends.
	Next() StepEnd
	// TryNext reports a step end that is ready, without blocking.
	TryNext() (StepEnd, bool)
	// TerminateSandbox terminates a sandbox that a retry rolls back, and
	// marks it torn down in rc.
	TerminateSandbox(rc *RunContext, id string) error
}

// StepEnd is one step's end: its list index and its error (nil on
// success).
type StepEnd struct {
	Index int
	Err   error
}

// localExecutor runs each step in a goroutine against the shared context.
type localExecutor struct {
	r       *Runner
	ctx     context.Context
	results chan StepEnd
}

func newLocalExecutor(ctx context.Context, r *Runner, n int) *localExecutor {
	return &localExecutor{r: r, ctx: ctx, results: make(chan StepEnd, n)}
}

func (e *localExecutor) Now() time.Time { return e.r.now() }
func (e *localExecutor) Err() error     { return e.ctx.Err() }

func (e *localExecutor) Start(i int, d *StepDef, rc *RunContext, seed map[string]string) {
	go func() {
		err := e.r.RunStep(e.ctx, d, rc, seed)
		e.results <- StepEnd{Index: i, Err: err}
	}()
}

func (e *localExecutor) Next() StepEnd { return <-e.results }

func (e *localExecutor) TryNext() (StepEnd, bool) {
	select {
	case r := <-e.results:
		return r, true
	default:
		return StepEnd{}, false
	}
}

func (e *localExecutor) TerminateSandbox(rc *RunContext, id string) error {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), 120*time.Second)
	defer cancel()
	return rc.TerminateSandbox(tctx, id)
}

// RunDAG schedules task's steps on exec against rc and returns the ledger,
// without recording a task instance and without touching rc's metadata
// ids: the scheduling core shared by Run (local goroutines) and the
// distributed runners (a Temporal workflow, whose clock, concurrency and
// cancellation come from exec). opts.StartStep and EndStep apply;
// Documents and InstanceID are ignored. Result.Status is set; the error is
// the first fatal step error, or exec.Err() when interrupted.
func (r *Runner) RunDAG(task *Task, rc *RunContext, o *RunOptions, exec Executor) (*Result, error) {
	var opts RunOptions
	if o != nil {
		opts = *o
	}
	opts.Documents = nil
	steps, err := opts.steps(task)
	if err != nil {
		return &Result{Context: rc, Status: StatusFailed}, err
	}
	s := &scheduler{r: r, ctx: context.Background(), rc: rc, steps: steps, opts: opts, task: task, exec: exec}
	res, err := s.run()
	res.Context = rc
	switch {
	case exec.Err() != nil:
		res.Status = StatusCancelled
		if err == nil {
			err = exec.Err()
		}
	case err != nil:
		res.Status = StatusFailed
	default:
		res.Status = StatusCompleted
	}
	return res, err
}

// steps is the task's steps cut at EndStep, with StartStep checked.
func (o *RunOptions) steps(task *Task) ([]*StepDef, error) {
	steps := task.Steps
	if o.EndStep > 0 && o.EndStep < len(steps) {
		steps = steps[:o.EndStep]
	}
	if o.StartStep < 0 || o.StartStep > len(steps) {
		return nil, fmt.Errorf("start_step %d out of range 0..%d", o.StartStep, len(steps))
	}
	return steps, nil
}
