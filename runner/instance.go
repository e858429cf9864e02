package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentenv/agentenv/internal/jsonvalue"
	"github.com/agentenv/agentenv/internal/procid"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/redact"
)

// Instance statuses.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	// StatusAbandoned is a run whose process died without recording an
	// end (kill -9, a crash, a reboot): MarkAbandoned sets it.
	StatusAbandoned = "abandoned"
)

// Instance is a task_instances document.
type Instance struct {
	InstanceID          string          `json:"instance_id"`
	TaskID              string          `json:"task_id"`
	TaskVersion         int             `json:"task_version"`
	TotalSteps          int             `json:"total_steps"`
	CreatedAtUTC        string          `json:"created_at_utc"`
	Rev                 int64           `json:"rev"`
	RunGeneration       int             `json:"run_generation"`
	JournalSeq          int             `json:"journal_seq"`
	Context             map[string]any  `json:"context"`
	CompletedSteps      []CompletedStep `json:"completed_steps"`
	Status              string          `json:"status"`
	Error               *string         `json:"error"`
	CompletedAtUTC      *string         `json:"completed_at_utc"`
	CurrentStep         int             `json:"current_step"`
	RerecordedSteps     []string        `json:"rerecorded_steps"`
	AttemptEpoch        int             `json:"attempt_epoch"`
	StepAttemptFailures []any           `json:"step_attempt_failures"`
	// Owner is the process running the instance (ours: MarkAbandoned
	// tells a dead run from a live one by it).
	Owner *procid.Owner `json:"owner,omitempty"`
}

// JournalSeedStep is the reserved step id of the journal entry holding the
// seed context.
const JournalSeedStep = "__seed__"

// CompletedStep is one completed_steps[] entry.
type CompletedStep struct {
	StepID string `json:"step_id"`
	Status string `json:"status"` // "success" | "failure"
}

// GetInstance reads a task instance.
func GetInstance(ctx context.Context, docs registry.DocumentStore, id string) (*Instance, error) {
	rec, err := docs.GetRecord(ctx, registry.TaskInstances, id)
	if err != nil {
		return nil, err
	}
	var inst Instance
	if err := rec.Decode(&inst); err != nil {
		return nil, fmt.Errorf("task instance %s: %w", id, err)
	}
	return &inst, nil
}

// MarkAbandoned marks every running task instance of docs whose owner
// process is certainly gone (procid.Owner.Gone: same host, and the pid is
// not running or names another process) as abandoned, and returns them as
// they were before (with their context, to report their sandboxes). An
// instance without an owner (older records) or owned on another host is
// left as it is.
func MarkAbandoned(ctx context.Context, docs registry.DocumentStore, now time.Time) ([]*Instance, error) {
	recs, err := docs.QueryRecords(ctx, registry.TaskInstances, &registry.RecordQuery{Where: map[string]any{"status": StatusRunning}})
	if err != nil {
		return nil, fmt.Errorf("list running task instances: %w", err)
	}
	var out []*Instance
	var errs []error
	at := registry.FormatMinute(now)
	for _, r := range recs {
		var inst Instance
		if r.Decode(&inst) != nil || inst.Owner == nil || !inst.Owner.Gone() {
			continue
		}
		owner := *inst.Owner
		msg := fmt.Sprintf("abandoned: the process running it (pid %d on %s) is gone", owner.PID, owner.Host)
		_, err := docs.UpdateRecord(ctx, registry.TaskInstances, r.Key, func(doc map[string]any) error {
			// Only the run that was seen dead: a re-run of the same id by a
			// live process owns the record now.
			var cur struct {
				Status string        `json:"status"`
				Owner  *procid.Owner `json:"owner"`
			}
			if b, err := json.Marshal(doc); err != nil || json.Unmarshal(b, &cur) != nil ||
				cur.Status != StatusRunning || cur.Owner == nil || *cur.Owner != owner {
				return registry.ErrNoChange
			}
			doc["status"] = StatusAbandoned
			doc["error"] = msg
			doc["completed_at_utc"] = at
			doc["rev"] = jsonvalue.Int(doc["rev"]) + 1
			return nil
		})
		switch {
		case err == nil:
			out = append(out, &inst)
		case !errors.Is(err, registry.ErrNoChange):
			errs = append(errs, fmt.Errorf("mark task instance %s abandoned: %w", r.Key, err))
		}
	}
	return out, errors.Join(errs...)
}

// recorder writes one run's task instance. Its errors are logged and never
// fail the run.
type recorder struct {
	docs registry.DocumentStore
	id   string
	log  *slog.Logger
	now  func() time.Time
}

func (r *recorder) enabled() bool { return r != nil && r.docs != nil }

// start writes the seed document; an existing id is reset (rev and
// run_generation bumped).
func (r *recorder) start(ctx context.Context, inst *Instance) {
	if !r.enabled() {
		return
	}
	if old, err := GetInstance(ctx, r.docs, inst.InstanceID); err == nil {
		inst.RunGeneration = old.RunGeneration + 1
		inst.Rev = old.Rev + 1
	}
	b, err := json.Marshal(inst)
	if err == nil {
		_, err = r.docs.UpsertRecord(ctx, registry.TaskInstances, inst.InstanceID, b)
	}
	if err != nil {
		r.log.Warn("task instance: seed write failed", "instance_id", inst.InstanceID, "error", err)
		return
	}
	var seed Ops
	for k, v := range inst.Context {
		seed.Sets = append(seed.Sets, SetOp{Path: []string{k}, Value: v})
	}
	r.journal(ctx, JournalSeedStep, "success", 0, inst.RunGeneration, 0, seed)
}

// step records one completion and the context paths it changed.
func (r *recorder) step(ctx context.Context, stepID, status string, ops Ops, total int, epoch int) {
	if !r.enabled() {
		return
	}
	now := registry.FormatMinute(r.now())
	rec, err := r.docs.UpdateRecord(ctx, registry.TaskInstances, r.id, func(doc map[string]any) error {
		c, _ := normalize(doc["context"]).(map[string]any)
		if c == nil {
			c = map[string]any{}
		}
		ops.Apply(c)
		doc["context"] = c
		done, _ := normalize(doc["completed_steps"]).([]any)
		done = append(done, map[string]any{"step_id": stepID, "status": status})
		doc["completed_steps"] = done
		doc["current_step"] = len(done)
		doc["journal_seq"] = jsonvalue.Int(doc["journal_seq"]) + 1
		doc["rev"] = jsonvalue.Int(doc["rev"]) + 1
		doc["attempt_epoch"] = epoch
		if len(done) >= total && doc["status"] == StatusRunning {
			doc["status"] = StatusCompleted
			doc["completed_at_utc"] = now
		}
		return nil
	})
	if err != nil {
		r.log.Warn("task instance: step write failed", "instance_id", r.id, "step_id", stepID, "error", err)
		return
	}
	var after struct {
		JournalSeq    int `json:"journal_seq"`
		RunGeneration int `json:"run_generation"`
	}
	_ = rec.Decode(&after)
	r.journal(ctx, stepID, status, after.JournalSeq, after.RunGeneration, epoch, ops)
}

// journal writes the task_step_journal entry of one step: the ops it
// applied, so that a later process can rebuild the context.
// The key is (instance_id, step_id); a re-run step replaces it.
func (r *recorder) journal(ctx context.Context, stepID, status string, seq, generation, epoch int, ops Ops) {
	b, err := json.Marshal(map[string]any{
		"instance_id": r.id, "step_id": stepID, "seq": seq, "generation": generation,
		"attempt_epoch": epoch, "status": status, "recorded_at": registry.FormatISO(r.now()), "ops": ops,
	})
	if err == nil {
		_, err = r.docs.UpsertRecord(ctx, registry.TaskStepJournal, r.id+"|"+stepID, b)
	}
	if err != nil {
		r.log.Warn("task step journal: write failed", "instance_id", r.id, "step_id", stepID, "error", err)
	}
}

// setContext applies ops to the recorded context after the steps (the
// run's own additions, such as the stored gateway trajectories), bumping
// rev so that a live view sees the change.
func (r *recorder) setContext(ctx context.Context, ops Ops) {
	if !r.enabled() {
		return
	}
	_, err := r.docs.UpdateRecord(context.WithoutCancel(ctx), registry.TaskInstances, r.id, func(doc map[string]any) error {
		c, _ := normalize(doc["context"]).(map[string]any)
		if c == nil {
			c = map[string]any{}
		}
		ops.Apply(c)
		doc["context"] = c
		doc["rev"] = jsonvalue.Int(doc["rev"]) + 1
		return nil
	})
	if err != nil {
		r.log.Warn("task instance: context write failed", "instance_id", r.id, "error", err)
	}
}

// finish writes a terminal failed/cancelled state (only if not completed),
// retried three times with backoff.
func (r *recorder) finish(ctx context.Context, status, msg string, full map[string]any) {
	if !r.enabled() {
		return
	}
	ctx = context.WithoutCancel(ctx)
	safe := redact.Strip(full)
	now := registry.FormatMinute(r.now())
	var err error
	for attempt := range 3 {
		_, err = r.docs.UpdateRecord(ctx, registry.TaskInstances, r.id, func(doc map[string]any) error {
			if doc["status"] == StatusCompleted && status == StatusFailed {
				return registry.ErrNoChange
			}
			doc["status"] = status
			doc["error"] = msg
			doc["context"] = safe
			doc["completed_at_utc"] = now
			doc["rev"] = jsonvalue.Int(doc["rev"]) + 1
			return nil
		})
		if err == nil || errors.Is(err, registry.ErrNoChange) {
			return
		}
		t := time.NewTimer(time.Duration(100<<attempt) * time.Millisecond)
		<-t.C
	}
	r.log.Warn("task instance: failure write failed", "instance_id", r.id, "error", err)
}

// complete marks the instance completed when every step was recorded but
// the last write raced (or there were no per-step writes, e.g. start_step
// skipped everything).
func (r *recorder) complete(ctx context.Context) {
	if !r.enabled() {
		return
	}
	now := registry.FormatMinute(r.now())
	_, err := r.docs.UpdateRecord(context.WithoutCancel(ctx), registry.TaskInstances, r.id, func(doc map[string]any) error {
		if doc["status"] != StatusRunning {
			return registry.ErrNoChange
		}
		doc["status"] = StatusCompleted
		doc["completed_at_utc"] = now
		doc["rev"] = jsonvalue.Int(doc["rev"]) + 1
		return nil
	})
	if err != nil && !errors.Is(err, registry.ErrNoChange) {
		r.log.Warn("task instance: completion write failed", "instance_id", r.id, "error", err)
	}
}

func normalize(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// reset rewrites the instance after a retry rolled the context back.
func (r *recorder) reset(ctx context.Context, safe map[string]any, done []CompletedStep, span map[int]bool, steps []*StepDef, epoch int) {
	if !r.enabled() {
		return
	}
	var rerecorded []any
	for i := range steps {
		if span[i] {
			rerecorded = append(rerecorded, steps[i].ID)
		}
	}
	_, err := r.docs.UpdateRecord(ctx, registry.TaskInstances, r.id, func(doc map[string]any) error {
		doc["context"] = safe
		doc["completed_steps"] = normalize(done)
		doc["current_step"] = len(done)
		doc["attempt_epoch"] = epoch
		prev, _ := normalize(doc["rerecorded_steps"]).([]any)
		doc["rerecorded_steps"] = append(prev, rerecorded...)
		doc["rev"] = jsonvalue.Int(doc["rev"]) + 1
		return nil
	})
	if err != nil {
		r.log.Warn("task instance: retry reset write failed", "instance_id", r.id, "error", err)
	}
}
