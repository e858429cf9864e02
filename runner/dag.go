package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/redact"
)

const (
	statePending = iota
	stateRunning
	stateDone
)

type journalEntry struct {
	i   int
	ops Ops
}

type pendingRetry struct {
	failing  int
	from     int
	failIdx  int // index in s.failed
	inFlight []int
	ledger   int // index in s.ledger
}

// scheduler runs one task's DAG.
type scheduler struct {
	r     *Runner
	ctx   context.Context
	rc    *RunContext
	steps []*StepDef
	opts  RunOptions
	rec   *recorder
	task  *Task
	exec  Executor

	deps, dependents [][]int
	state            []int
	success          []bool
	unmet            []int
	attempts         []int
	attempt          []int // attempt number of each step's current run
	started, ended   []time.Time
	before           []map[string]any
	seedDoc          map[string]any
	seedMap          map[string]string
	journal          []journalEntry
	epoch            int
	// track: diffs are needed (an instance is recorded or a step can
	// retry); otherwise the per-step snapshots are skipped.
	track bool

	running int
	fatal   error
	retry   *pendingRetry

	ledger []LedgerEntry
	failed []FailedStep
}

func (s *scheduler) run() (*Result, error) {
	n := len(s.steps)
	s.deps = Dependencies(s.steps)
	s.dependents = make([][]int, n)
	for i, ds := range s.deps {
		for _, j := range ds {
			s.dependents[j] = append(s.dependents[j], i)
		}
	}
	s.state = make([]int, n)
	s.success = make([]bool, n)
	s.unmet = make([]int, n)
	s.attempts = make([]int, n)
	s.attempt = make([]int, n)
	s.started = make([]time.Time, n)
	s.ended = make([]time.Time, n)
	s.before = make([]map[string]any, n)
	for i := range n {
		s.unmet[i] = len(s.deps[i])
	}
	s.seedMap = s.rc.Seed()
	s.track = s.rec.enabled()
	for _, d := range s.steps {
		if d.RetryConfig != nil {
			s.track = true
		}
	}
	for i := 0; i < s.opts.StartStep; i++ {
		s.state[i] = stateDone
		s.success[i] = true
		s.ledger = append(s.ledger, LedgerEntry{StepID: s.steps[i].ID, Outcome: OutcomeSkipped})
		s.rec.step(s.ctx, s.steps[i].ID, "success", Ops{}, n, s.epoch)
		s.release(i)
	}
	s.seedDoc = s.rc.Snapshot()
	s.launchReady()
	for s.running > 0 {
		batch := []StepEnd{s.exec.Next()}
		s.running--
		for s.running > 0 {
			res, ok := s.exec.TryNext()
			if !ok {
				break
			}
			batch = append(batch, res)
			s.running--
		}
		retryable := 0
		for _, res := range batch {
			if res.Err != nil && s.canRetry(res.Index) {
				retryable++
			}
		}
		for _, res := range batch {
			s.complete(res, retryable == 1)
		}
		if s.retry != nil && s.running == 0 {
			s.doRetry()
		}
		if s.fatal == nil && s.retry == nil && s.exec.Err() == nil {
			s.launchReady()
		}
	}
	return &Result{Ledger: s.ledger, Failed: s.failed}, s.fatal
}

func (s *scheduler) release(i int) {
	for _, j := range s.dependents[i] {
		s.unmet[j]--
	}
}

func (s *scheduler) launchReady() {
	for i := range s.steps {
		if s.state[i] == statePending && s.unmet[i] == 0 {
			s.launch(i)
		}
	}
}

func (s *scheduler) launch(i int) {
	d := s.steps[i]
	s.state[i] = stateRunning
	s.running++
	s.started[i] = s.exec.Now()
	s.ended[i] = time.Time{}
	if s.track {
		s.before[i] = s.rc.Snapshot()
	}
	if s.opts.OnStepStart != nil {
		s.opts.OnStepStart(i, len(s.steps), d)
	}
	s.exec.Start(i, d, s.rc, s.seedMap)
}

func (s *scheduler) canRetry(i int) bool {
	d := s.steps[i]
	return d.RetryConfig != nil && s.attempts[i] < d.RetryConfig.MaxRetries &&
		s.fatal == nil && s.retry == nil && s.exec.Err() == nil
}

func (s *scheduler) complete(res StepEnd, retryOK bool) {
	i, d := res.Index, s.steps[res.Index]
	s.ended[i] = s.exec.Now()
	secs := s.ended[i].Sub(s.started[i]).Seconds()
	var ops Ops
	if s.track {
		ops = Diff(s.before[i], s.rc.Snapshot())
	}
	if res.Err == nil {
		s.state[i] = stateDone
		s.success[i] = true
		s.journal = append(s.journal, journalEntry{i: i, ops: ops})
		s.ledger = append(s.ledger, LedgerEntry{StepID: d.ID, Attempt: s.attempt[i], Outcome: OutcomeSuccess})
		s.rec.step(s.ctx, d.ID, "success", safeOps(ops), len(s.steps), s.epoch)
		s.release(i)
		s.callback(i, secs, nil)
		return
	}
	fs := FailedStep{StepID: d.ID, StepType: d.Type, Error: res.Err.Error(), ErrorType: ErrorType(res.Err),
		StartedAtUTC: registry.FormatISO(s.started[i]), DurationSeconds: secs}
	cancelled := s.exec.Err() != nil
	inSpan := s.retry != nil && s.inSpan(i)
	switch {
	case !cancelled && retryOK && s.canRetry(i):
		s.addFailure(fs)
		s.retry = &pendingRetry{failing: i, from: s.index(d.RetryConfig.RetryFromStepID),
			failIdx: len(s.failed) - 1, inFlight: s.inFlight(), ledger: len(s.ledger)}
		s.state[i] = stateDone
		s.ledger = append(s.ledger, LedgerEntry{StepID: d.ID, Attempt: s.attempt[i], Outcome: OutcomeRetried, Err: res.Err})
	case inSpan && !cancelled:
		// A sibling in flight when a retryable failure landed: it is part of
		// the span and runs again, so its failure is superseded.
		fs.Retried = true
		s.addFailure(fs)
		s.state[i] = stateDone
		s.ledger = append(s.ledger, LedgerEntry{StepID: d.ID, Attempt: s.attempt[i], Outcome: OutcomeRetried, Err: res.Err})
	case !d.FailTaskOnError && !cancelled:
		s.addFailure(fs)
		s.state[i] = stateDone
		s.journal = append(s.journal, journalEntry{i: i, ops: ops})
		s.ledger = append(s.ledger, LedgerEntry{StepID: d.ID, Attempt: s.attempt[i], Outcome: OutcomeTolerated, Err: res.Err})
		if s.track {
			s.rec.step(s.ctx, d.ID, "failure", safeOps(Diff(s.before[i], s.rc.Snapshot())), len(s.steps), s.epoch)
		}
		s.release(i)
	default:
		fs.IsFatal = true
		s.addFailure(fs)
		s.state[i] = stateDone
		outcome := OutcomeFatal
		if cancelled {
			outcome = OutcomeCancelled
		}
		s.ledger = append(s.ledger, LedgerEntry{StepID: d.ID, Attempt: s.attempt[i], Outcome: outcome, Err: res.Err})
		if s.fatal == nil && !cancelled {
			s.fatal = fmt.Errorf("step %q (%s) failed: %w", d.ID, d.Type, res.Err)
		}
	}
	s.callback(i, secs, res.Err)
}

func (s *scheduler) callback(i int, secs float64, err error) {
	if s.opts.OnStepComplete != nil {
		s.opts.OnStepComplete(i, len(s.steps), s.steps[i], secs, err)
	}
}

func (s *scheduler) addFailure(fs FailedStep) {
	s.failed = append(s.failed, fs)
	s.rc.SetMetadata("failed_steps", s.failed)
}

func (s *scheduler) index(id string) int {
	for i, d := range s.steps {
		if d.ID == id {
			return i
		}
	}
	return -1
}

func (s *scheduler) inFlight() []int {
	var out []int
	for i, st := range s.state {
		if st == stateRunning {
			out = append(out, i)
		}
	}
	return out
}

// span is the retry span: retry_from, its transitive dependents, and the
// steps in flight when the failure landed.
func (s *scheduler) span(p *pendingRetry) map[int]bool {
	span := map[int]bool{p.from: true, p.failing: true}
	stack := []int{p.from}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, j := range s.dependents[n] {
			if !span[j] {
				span[j] = true
				stack = append(stack, j)
			}
		}
	}
	for _, j := range p.inFlight {
		span[j] = true
	}
	return span
}

func (s *scheduler) inSpan(i int) bool { return s.span(s.retry)[i] }

// doRetry rolls the context back to the seed plus the surviving steps'
// diffs and re-dispatches the span. When a survivor ran
// concurrently with a span step its diff may depend on the span, so the
// retry is refused and the original failure stands.
func (s *scheduler) doRetry() {
	p := s.retry
	s.retry = nil
	if s.exec.Err() != nil {
		s.refuseRetry(p, "the run was cancelled")
		return
	}
	span := s.span(p)
	var survivors []journalEntry
	for _, je := range s.journal {
		if span[je.i] {
			continue
		}
		for j := range span {
			if !s.started[j].IsZero() && overlaps(s.started[je.i], s.ended[je.i], s.started[j], s.ended[j]) {
				s.refuseRetry(p, fmt.Sprintf("survivor %q overlapped the retry span", s.steps[je.i].ID))
				return
			}
		}
		survivors = append(survivors, je)
	}
	doc := deepCopy(s.seedDoc).(map[string]any)
	replayed := []string{}
	for _, je := range survivors {
		je.ops.Apply(doc)
		replayed = append(replayed, s.steps[je.i].ID)
	}
	kept := map[string]bool{}
	for _, e := range doc[KeyDeployedSandboxes].([]any) {
		if m, ok := e.(map[string]any); ok {
			id, _ := m["sandbox_id"].(string)
			kept[id] = true
		}
	}
	rolledBack := []string{}
	for _, ds := range s.rc.Sandboxes() {
		if !kept[ds.SandboxID] {
			if err := s.exec.TerminateSandbox(s.rc, ds.SandboxID); err != nil {
				s.rc.Logger().Warn("retry: rollback terminate failed", "sandbox_id", ds.SandboxID, "error", err)
			}
			rolledBack = append(rolledBack, ds.SandboxID)
		}
	}
	s.epoch++
	s.failed[p.failIdx].Retried = true
	md := doc[KeyMetadata].(map[string]any)
	md["failed_steps"] = toJSONValue(s.failed)
	prevResets, _ := s.rc.Metadata("retry_resets")
	resets, _ := prevResets.([]any)
	md["retry_resets"] = append(resets, toJSONValue(map[string]any{
		"attempt": s.epoch, "step_id": s.steps[p.failing].ID,
		"retry_from_step_id": s.steps[p.from].ID, "replayed": replayed,
		"at_utc": registry.FormatISO(s.exec.Now()),
		"rolled_back_sandboxes": map[string]any{
			"deployed_envs": []string{}, "deployed_agents": []string{}, "deployed_sandboxes": rolledBack},
	}))
	s.rc.replace(doc)
	s.journal = survivors
	s.attempts[p.failing]++
	for j := range span {
		s.state[j] = statePending
		s.success[j] = false
		s.attempt[j]++
		s.started[j], s.ended[j] = time.Time{}, time.Time{}
	}
	for j := range s.steps {
		if s.state[j] != statePending {
			continue
		}
		s.unmet[j] = 0
		for _, k := range s.deps[j] {
			if s.state[k] != stateDone {
				s.unmet[j]++
			}
		}
	}
	s.rec.reset(s.ctx, s.rc.SafeSnapshot(), s.completedSteps(), span, s.steps, s.epoch)
}

// refuseRetry applies the original failure as if it had no retry budget.
func (s *scheduler) refuseRetry(p *pendingRetry, why string) {
	d := s.steps[p.failing]
	s.rc.Logger().Warn("retry refused; the original error stands", "step_id", d.ID, "reason", why)
	entry := &s.ledger[p.ledger]
	fs := s.failed[p.failIdx]
	if !d.FailTaskOnError {
		entry.Outcome = OutcomeTolerated
		s.rec.step(s.ctx, d.ID, "failure", Ops{}, len(s.steps), s.epoch)
		s.release(p.failing)
		return
	}
	entry.Outcome = OutcomeFatal
	fs.IsFatal = true
	s.failed[p.failIdx] = fs
	s.rc.SetMetadata("failed_steps", s.failed)
	if s.fatal == nil {
		s.fatal = fmt.Errorf("step %q (%s) failed: %w", d.ID, d.Type, entry.Err)
	}
}

func (s *scheduler) completedSteps() []CompletedStep {
	out := []CompletedStep{}
	for _, je := range s.journal {
		st := "success"
		if !s.success[je.i] {
			st = "failure"
		}
		out = append(out, CompletedStep{StepID: s.steps[je.i].ID, Status: st})
	}
	return out
}

func overlaps(a0, a1, b0, b1 time.Time) bool {
	if a1.IsZero() || b1.IsZero() {
		return true
	}
	return a0.Before(b1) && b0.Before(a1)
}

// safeOps is ops without the safe-form secret keys: operations on a path
// through such a key are dropped and values are stripped. It is what the
// instance record receives.
func safeOps(o Ops) Ops {
	var out Ops
	for _, st := range o.Sets {
		if !secretPath(st.Path) {
			out.Sets = append(out.Sets, SetOp{Path: st.Path, Value: redact.Strip(st.Value)})
		}
	}
	for _, u := range o.Unsets {
		if !secretPath(u) {
			out.Unsets = append(out.Unsets, u)
		}
	}
	for _, a := range o.AddToSets {
		if !secretPath(a.Path) {
			out.AddToSets = append(out.AddToSets, AddToSetOp{Path: a.Path, Values: redact.Strip(a.Values).([]any)})
		}
	}
	return out
}

func secretPath(p []string) bool {
	for _, k := range p {
		if redact.IsSafeFormKey(k) {
			return true
		}
	}
	return false
}
