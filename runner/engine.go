package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/agentenv/agentenv/internal/procid"
	"github.com/agentenv/agentenv/registry"
)

// Task is a parsed task: an id, a version and its steps.
type Task struct {
	ID      string
	Version int
	Steps   []*StepDef
}

// StepsJSON is the task's steps as stored.
func (t *Task) StepsJSON() (json.RawMessage, error) { return json.Marshal(t.Steps) }

// Options configures a Runner; nil means defaults.
type Options struct {
	// Steps is the step registry; nil means an empty one (a caller that
	// wants the built-ins passes steps.Builtin()).
	Steps *StepRegistry
	// Logger; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Runner executes tasks.
type Runner struct {
	steps *StepRegistry
	log   *slog.Logger
	now   func() time.Time
}

// New returns a Runner.
func New(o *Options) *Runner {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Steps == nil {
		opts.Steps = NewStepRegistry()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Runner{steps: opts.Steps, log: opts.Logger, now: opts.Now}
}

// Steps is the runner's step registry.
func (r *Runner) Steps() *StepRegistry { return r.steps }

// ParseTask parses a task's step array and validates it.
func (r *Runner) ParseTask(id string, version int, data []byte) (*Task, error) {
	defs, err := ParseSteps(r.steps, data)
	if err != nil {
		return nil, err
	}
	return &Task{ID: id, Version: version, Steps: defs}, nil
}

// RunOptions tunes one Run; nil means defaults.
type RunOptions struct {
	// InstanceID, when set, is upserted (a caller-supplied id); otherwise
	// "<task_id>-<8 chars>" is minted.
	InstanceID string
	// Documents, when set, receives the task instance record.
	Documents registry.DocumentStore
	// StartStep seeds earlier steps as completed; EndStep (exclusive, 0 =
	// all) truncates the task.
	StartStep, EndStep int
	// OnStepStart and OnStepComplete are called from the scheduler
	// goroutine; index is the list position. err is nil on success.
	OnStepStart    func(index, total int, d *StepDef)
	OnStepComplete func(index, total int, d *StepDef, seconds float64, err error)
}

// FailedStep is one metadata.failed_steps[] entry.
type FailedStep struct {
	StepID          string  `json:"step_id"`
	StepType        string  `json:"step_type"`
	Error           string  `json:"error"`
	ErrorType       string  `json:"error_type"`
	StartedAtUTC    string  `json:"started_at_utc"`
	DurationSeconds float64 `json:"duration_seconds"`
	IsFatal         bool    `json:"is_fatal"`
	Retried         bool    `json:"retried,omitempty"`
}

// Outcome of one step execution in the ledger.
const (
	OutcomeSuccess   = "success"
	OutcomeTolerated = "tolerated"
	OutcomeFatal     = "fatal"
	OutcomeRetried   = "retried"   // failed, then its span was re-dispatched
	OutcomeCancelled = "cancelled" // failed because the run was interrupted
	OutcomeSkipped   = "skipped"   // before start_step
)

// LedgerEntry records one step execution, in completion order.
type LedgerEntry struct {
	StepID  string
	Attempt int // 0 for the first attempt
	Outcome string
	Err     error
}

// Result is what Run returns alongside its error.
type Result struct {
	InstanceID string
	Status     string // running is never returned
	Ledger     []LedgerEntry
	Failed     []FailedStep
	Context    *RunContext
	Seconds    float64
}

// ErrorType names an error for failed_steps.error_type: the Kind() of an
// error in the chain when it has one.
func ErrorType(err error) string {
	var k interface{ Kind() string }
	switch {
	case errors.As(err, &k):
		return k.Kind()
	case errors.Is(err, context.Canceled):
		return "Cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "Timeout"
	case errors.Is(err, ErrUnknownName):
		return "NameError"
	}
	return "StepError"
}

// Run executes task against rc as a DAG and records a task
// instance. The returned error is the first fatal step error, or the
// context's error when interrupted; Result is never nil.
func (r *Runner) Run(ctx context.Context, task *Task, rc *RunContext, o *RunOptions) (*Result, error) {
	var opts RunOptions
	if o != nil {
		opts = *o
	}
	steps, err := opts.steps(task)
	if err != nil {
		return &Result{Context: rc, Status: StatusFailed}, err
	}
	id := opts.InstanceID
	if id == "" {
		id = registry.NewInstanceID(task.ID)
	}
	rc.SetMetadata("task_id", task.ID)
	rc.SetMetadata("instance_id", id)
	if _, ok := rc.Metadata("run_group_id"); !ok {
		rc.SetMetadata("run_group_id", registry.RandomSuffix(32))
	}
	rec := &recorder{docs: opts.Documents, id: id, log: r.log, now: r.now}
	started := r.now()
	rec.start(ctx, &Instance{
		InstanceID: id, TaskID: task.ID, TaskVersion: task.Version, TotalSteps: len(steps),
		CreatedAtUTC: registry.FormatMinute(started), Context: rc.SafeSnapshot(),
		CompletedSteps: []CompletedStep{}, Status: StatusRunning, RerecordedSteps: []string{},
		StepAttemptFailures: []any{}, Owner: new(procid.Self()),
	})
	s := &scheduler{r: r, ctx: ctx, rc: rc, steps: steps, opts: opts, rec: rec, task: task,
		exec: newLocalExecutor(ctx, r, len(steps))}
	res, err := s.run()
	if storeEnvTrajectories(ctx, rc, id) {
		v, _ := rc.Metadata(KeyEnvTrajectories)
		rec.setContext(ctx, Ops{Sets: []SetOp{{Path: []string{KeyMetadata, KeyEnvTrajectories}, Value: v}}})
	}
	res.InstanceID = id
	res.Context = rc
	res.Seconds = r.now().Sub(started).Seconds()
	switch {
	case ctx.Err() != nil:
		res.Status = StatusCancelled
		if err == nil {
			err = context.Cause(ctx)
		}
		msg := "cancelled"
		if c := context.Cause(ctx); c != nil && c != context.Canceled {
			msg = c.Error()
		}
		rec.finish(ctx, StatusCancelled, msg, rc.Snapshot())
	case err != nil:
		res.Status = StatusFailed
		rec.finish(ctx, StatusFailed, err.Error(), rc.Snapshot())
	default:
		res.Status = StatusCompleted
		rec.complete(ctx)
	}
	return res, err
}

// RunStep decodes the step with the seed applied and runs it against rc,
// turning a panic into an error. Executors call it wherever the step runs
// (a goroutine here, an activity on a worker).
func (r *Runner) RunStep(ctx context.Context, d *StepDef, rc *RunContext, seed map[string]string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("step panicked", "step_id", d.ID, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("step panicked: %v", p)
		}
	}()
	cfg := d.Config
	if len(seed) > 0 {
		fields, changed := substituteSeed(d.Fields, seed)
		if changed {
			c, derr := decodeConfig(d.info, fields)
			if derr != nil {
				return fmt.Errorf("after seed substitution: %w", errors.Join(derr...))
			}
			cfg = c
		}
	}
	return cfg.Run(ctx, rc.forStep(d))
}

// TeardownRun terminates every sandbox the run recorded or holds, each
// bounded by perSandbox (0 = 120 s), and returns how many it terminated.
// It never stops at the first error.
func (r *Runner) TeardownRun(ctx context.Context, rc *RunContext, perSandbox time.Duration) (int, error) {
	if perSandbox <= 0 {
		perSandbox = 120 * time.Second
	}
	ctx = context.WithoutCancel(ctx)
	var errs []error
	n := 0
	for _, id := range rc.teardownTargets() {
		tctx, cancel := context.WithTimeout(ctx, perSandbox)
		err := rc.TerminateSandbox(tctx, id)
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
