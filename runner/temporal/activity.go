package temporal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// Workflows holds the workflow and its activities for one worker process:
// the step registry, the worker's services (stores, sandbox providers)
// and the sandboxes its steps created that are still live here.
type Workflows struct {
	r      *runner.Runner
	svc    *runner.Services
	limits map[string]chan struct{}
	hooks  Hooks
	beat   time.Duration

	mu   sync.Mutex
	live map[string]sandbox.Sandbox // by sandbox id
}

// WorkflowsOptions configures NewWorkflows; nil means defaults.
type WorkflowsOptions struct {
	// ProviderLimits caps, per sandbox provider name, how many steps of
	// this worker create sandboxes of that provider at once (a step holds
	// its slot from its first create until it ends). Absent or 0 means no
	// cap beyond the worker's concurrent activities.
	ProviderLimits map[string]int
	// Hooks observe the workflow in-process (tests).
	Hooks Hooks
	// HeartbeatInterval is how often a running step heartbeats; 0 means
	// 5 s. It must stay well under the runs' heartbeat timeout.
	HeartbeatInterval time.Duration
}

// NewWorkflows returns the workflow and activities over r's step registry
// and svc (the worker's stores and providers; nil means none).
func NewWorkflows(r *runner.Runner, svc *runner.Services, o *WorkflowsOptions) *Workflows {
	var opts WorkflowsOptions
	if o != nil {
		opts = *o
	}
	if svc == nil {
		svc = &runner.Services{}
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 5 * time.Second
	}
	w := &Workflows{r: r, hooks: opts.Hooks, beat: opts.HeartbeatInterval,
		limits: map[string]chan struct{}{}, live: map[string]sandbox.Sandbox{}}
	for name, n := range opts.ProviderLimits {
		if n > 0 {
			w.limits[name] = make(chan struct{}, n)
		}
	}
	// The providers are wrapped per step (see RunStep); this copy keeps
	// the caller's Services untouched.
	cp := *svc
	w.svc = &cp
	return w
}

// heartbeat is the RunStep activity's heartbeat detail: the step's
// progress and the sandboxes it has created so far.
type heartbeat struct {
	StepID  string           `json:"step_id"`
	Seconds float64          `json:"seconds"`
	Created []sandbox.Handle `json:"created"`
}

// attempt tracks one execution of a step on this worker.
type attempt struct {
	mu      sync.Mutex
	created []sandbox.Handle
	held    map[string]bool // providers whose limit slot this attempt holds
}

func (a *attempt) add(h sandbox.Handle) {
	a.mu.Lock()
	a.created = append(a.created, h)
	a.mu.Unlock()
}

func (a *attempt) list() []sandbox.Handle {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]sandbox.Handle(nil), a.created...)
}

// RunStep is the activity: it runs one step on this worker against the
// context the workflow sent and returns the step's changes.
func (w *Workflows) RunStep(ctx context.Context, in StepInput) (*StepOutput, error) {
	task, err := w.r.ParseTask("remote", 0, in.Steps)
	if err != nil {
		return nil, fmt.Errorf("parse task: %w", err)
	}
	if in.Index < 0 || in.Index >= len(task.Steps) {
		return nil, fmt.Errorf("step index %d out of range 0..%d", in.Index, len(task.Steps)-1)
	}
	d := task.Steps[in.Index]
	info := activity.GetInfo(ctx)
	labels := stepLabels(info.WorkflowExecution.RunID, d.ID)
	// A retried attempt (its worker died or stopped): what the lost
	// attempt created is torn down before the step runs again. Its last
	// heartbeat lists what it reported, but the SDK sends heartbeats in
	// batches, so a worker killed just after a create may not have
	// reported it: the sweep by the step's labels finds those.
	if info.Attempt > 1 || activity.HasHeartbeatDetails(ctx) {
		var prev heartbeat
		if activity.HasHeartbeatDetails(ctx) {
			_ = activity.GetHeartbeatDetails(ctx, &prev)
		}
		if _, err := w.Terminate(ctx, prev.Created); err != nil {
			return nil, fmt.Errorf("tear down the lost attempt's sandboxes: %w", err)
		}
		if _, err := w.svc.Sweep(ctx, labels); err != nil {
			return nil, fmt.Errorf("sweep the lost attempt's sandboxes: %w", err)
		}
	}
	at := &attempt{held: map[string]bool{}}
	defer w.release(at)
	svc := *w.svc
	svc.Sandboxes = make(map[string]runner.SandboxProvider, len(w.svc.Sandboxes))
	for name, p := range w.svc.Sandboxes {
		svc.Sandboxes[name] = &trackingProvider{SandboxProvider: p, w: w, at: at, ctx: ctx, stepID: d.ID, labels: labels}
	}
	rc := runner.NewRunContext(in.Context, &svc)
	if v, ok := rc.Metadata("torn_down_sandbox_ids"); ok {
		l, _ := v.([]any)
		for _, id := range l {
			if s, ok := id.(string); ok {
				rc.MarkTornDown(s)
			}
		}
	}
	w.mu.Lock()
	for _, ds := range rc.Sandboxes() {
		if sb, ok := w.live[ds.SandboxID]; ok {
			rc.HoldSandbox(sb)
		}
	}
	w.mu.Unlock()
	before := rc.Snapshot()
	started := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Beat well within the run's heartbeat timeout: a worker beating
		// every 5 s under a 3 s timeout would lose every long step.
		beat := w.beat
		if hb := activity.GetInfo(ctx).HeartbeatTimeout; hb > 0 {
			beat = min(beat, hb/3)
		}
		t := time.NewTicker(beat)
		defer t.Stop()
		for {
			activity.RecordHeartbeat(ctx, heartbeat{StepID: d.ID, Seconds: time.Since(started).Seconds(), Created: at.list()})
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	stepErr := w.r.RunStep(ctx, d, rc, in.Seed)
	close(stop)
	wg.Wait()
	created := at.list()
	if stepErr != nil && ctx.Err() != nil && stopping(ctx) {
		// The worker is shutting down: hand the step back. Temporal retries
		// it elsewhere, and that attempt tears down what this one made (the
		// last heartbeat lists it); doing it here too is only quicker.
		activity.RecordHeartbeat(ctx, heartbeat{StepID: d.ID, Created: created})
		if _, err := w.Terminate(context.WithoutCancel(ctx), created); err == nil {
			activity.RecordHeartbeat(ctx, heartbeat{StepID: d.ID})
		}
		return nil, fmt.Errorf("worker stopping during step %q: %w", d.ID, stepErr)
	}
	if stepErr != nil && ctx.Err() != nil {
		// Cancelled: a cancelled activity's result may never reach the
		// workflow, so what this attempt created goes now rather than at
		// the run's teardown (which then finds it gone).
		if _, err := w.Terminate(context.WithoutCancel(ctx), created); err != nil {
			activity.GetLogger(ctx).Warn("cancelled step: teardown failed", "step_id", d.ID, "error", err)
		}
	}
	out := &StepOutput{Ops: runner.Diff(before, rc.Snapshot()), Created: created}
	if stepErr != nil {
		out.Err, out.ErrType = stepErr.Error(), runner.ErrorType(stepErr)
	}
	return out, nil
}

// stopping reports whether this worker is shutting down.
func stopping(ctx context.Context) bool {
	select {
	case <-activity.GetWorkerStopChannel(ctx):
		return true
	default:
		return false
	}
}

func (w *Workflows) release(at *attempt) {
	at.mu.Lock()
	defer at.mu.Unlock()
	for name := range at.held {
		<-w.limits[name]
	}
}

// Labels every sandbox a step creates carries, so that what a dead
// attempt created is found without its handle (sandbox.Sweeper).
const (
	LabelRun  = "agentenv.temporal.run" // the workflow's run id
	LabelStep = "agentenv.temporal.step"
)

// stepLabels are the sweep labels of step stepID of workflow run runID;
// without stepID, of the whole run.
func stepLabels(runID, stepID string) map[string]string {
	l := map[string]string{LabelRun: runID}
	if stepID != "" {
		l[LabelStep] = stepID
	}
	return l
}

// Sweep is the SweepSandboxes activity: it terminates the sandboxes
// created with labels on every provider of this worker that can find them
// (sandbox.Sweeper) and returns their ids.
func (w *Workflows) Sweep(ctx context.Context, labels map[string]string) ([]string, error) {
	ids, err := w.svc.Sweep(ctx, labels)
	w.mu.Lock()
	for _, id := range ids {
		delete(w.live, id)
	}
	w.mu.Unlock()
	return ids, err
}

// Terminate is the TerminateSandboxes activity: it terminates each
// sandbox, live on this worker or reconnected by handle, and returns the
// ids that are gone (a sandbox already gone counts). It never stops at the
// first error.
func (w *Workflows) Terminate(ctx context.Context, hs []sandbox.Handle) ([]string, error) {
	var done []string
	var errs []error
	for _, h := range hs {
		w.mu.Lock()
		sb := w.live[h.ID]
		w.mu.Unlock()
		if sb == nil {
			s, err := w.svc.Reconnect(ctx, h)
			switch {
			case errors.Is(err, sandbox.ErrNotFound):
				done = append(done, h.ID)
				continue
			case err != nil:
				errs = append(errs, fmt.Errorf("sandbox %s: %w", h.ID, err))
				continue
			}
			sb = s
		}
		tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := sb.Terminate(tctx)
		cancel()
		if err != nil && !errors.Is(err, sandbox.ErrNotFound) && !errors.Is(err, sandbox.ErrTerminated) {
			errs = append(errs, fmt.Errorf("terminate sandbox %s: %w", h.ID, err))
			continue
		}
		w.mu.Lock()
		delete(w.live, h.ID)
		w.mu.Unlock()
		done = append(done, h.ID)
	}
	return done, errors.Join(errs...)
}

// trackingProvider records every sandbox a step creates (heartbeat,
// result, the worker's live set) and applies the provider's limit.
type trackingProvider struct {
	runner.SandboxProvider
	w      *Workflows
	at     *attempt
	ctx    context.Context // the activity's, for heartbeats
	stepID string
	labels map[string]string // stepLabels, added to every sandbox
}

func (p *trackingProvider) CreateSandbox(ctx context.Context, s sandbox.Spec) (sandbox.Sandbox, error) {
	if err := p.acquire(ctx); err != nil {
		return nil, err
	}
	s.Labels = maps.Clone(s.Labels)
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	maps.Copy(s.Labels, p.labels)
	sb, err := p.SandboxProvider.CreateSandbox(ctx, s)
	if err != nil {
		return nil, err
	}
	p.at.add(sb.Handle())
	activity.RecordHeartbeat(p.ctx, heartbeat{StepID: p.stepID, Created: p.at.list()})
	p.w.mu.Lock()
	p.w.live[sb.ID()] = sb
	p.w.mu.Unlock()
	return sb, nil
}

// GetSandbox keeps reconnection working through the wrapper.
func (p *trackingProvider) GetSandbox(ctx context.Context, h sandbox.Handle) (sandbox.Sandbox, error) {
	r, ok := p.SandboxProvider.(sandbox.Reconnector)
	if !ok {
		return nil, fmt.Errorf("provider %q cannot reconnect: %w", h.Type, sandbox.ErrNotSupported)
	}
	return r.GetSandbox(ctx, h)
}

func (p *trackingProvider) acquire(ctx context.Context) error {
	name := p.Type()
	lim, ok := p.w.limits[name]
	if !ok {
		return nil
	}
	p.at.mu.Lock()
	held := p.at.held[name]
	p.at.mu.Unlock()
	if held {
		return nil
	}
	select {
	case lim <- struct{}{}:
		p.at.mu.Lock()
		p.at.held[name] = true
		p.at.mu.Unlock()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for a %s slot on this worker: %w", name, ctx.Err())
	}
}
