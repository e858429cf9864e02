package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentenv/agentenv/registry"
)

// Preflight collects the configuration problems of a task that need the
// stores but no sandbox: every artifact named by a
// declared entity reference must be stored, every step implementing
// Preflighter is asked, and each problem names its step (and its field
// when the problem is a *FieldError).
func Preflight(ctx context.Context, t *Task, s *Services) []error {
	var out []error
	for i, d := range t.Steps {
		for _, err := range artifactPreflight(ctx, d, s) {
			out = append(out, preflightProblem(i, d, err))
		}
		p, ok := d.Config.(Preflighter)
		if !ok {
			continue
		}
		for _, err := range p.Preflight(ctx, s) {
			out = append(out, preflightProblem(i, d, err))
		}
	}
	return out
}

// ErrPreflight is returned by CreateTask when preflight found problems and
// SkipValidation is false; nothing was saved.
var ErrPreflight = errors.New("preflight found problems")

// PreflightError carries the problems.
type PreflightError struct{ Problems []error }

func (e *PreflightError) Error() string {
	return fmt.Sprintf("Preflight found %d problem(s)", len(e.Problems))
}

// Is makes errors.Is(err, ErrPreflight) hold.
func (e *PreflightError) Is(target error) bool { return target == ErrPreflight }

// CreateTaskOptions tunes CreateTask; nil means defaults.
type CreateTaskOptions struct {
	// SkipValidation saves even when preflight finds problems (parse and
	// DAG errors are never skipped).
	SkipValidation bool
	// OnStep is called after each step document is stored.
	OnStep func(i, n int, d *StepDef, version int)
}

// CreateTask parses a step array, preflights it, stores each step in
// task_steps (informational) and the task in tasks, and returns the stored
// task. Bad input stores nothing.
func (r *Runner) CreateTask(ctx context.Context, docs registry.DocumentStore, s *Services, id string, data []byte, o *CreateTaskOptions) (*Task, error) {
	var opts CreateTaskOptions
	if o != nil {
		opts = *o
	}
	if err := registry.ValidateID(id); err != nil {
		return nil, fmt.Errorf("--id: %w", err)
	}
	defs, err := ParseSteps(r.steps, data)
	if err != nil {
		return nil, err
	}
	t := &Task{ID: id, Steps: defs}
	if probs := Preflight(ctx, t, s); len(probs) > 0 && !opts.SkipValidation {
		return nil, &PreflightError{Problems: probs}
	}
	for i, d := range defs {
		b, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		doc, err := docs.Put(ctx, registry.TaskSteps, d.ID, b, nil)
		if err != nil {
			return nil, fmt.Errorf("store step %q: %w", d.ID, err)
		}
		v := doc.Version
		d.Version = &v
		if opts.OnStep != nil {
			opts.OnStep(i, len(defs), d, v)
		}
	}
	steps, err := json.Marshal(defs)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(map[string]any{"type": "task", "steps": json.RawMessage(steps)})
	doc, err := docs.Put(ctx, registry.Tasks, id, body, nil)
	if err != nil {
		return nil, fmt.Errorf("store task %q: %w", id, err)
	}
	t.Version = doc.Version
	return t, nil
}

// LoadTask reads a stored task and parses its steps (validated again on
// load).
func (r *Runner) LoadTask(ctx context.Context, docs registry.DocumentStore, ref registry.Ref) (*Task, error) {
	doc, err := docs.Get(ctx, registry.Tasks, ref)
	if err != nil {
		return nil, err
	}
	var body struct {
		Steps json.RawMessage `json:"steps"`
	}
	if err := doc.Decode(&body); err != nil {
		return nil, fmt.Errorf("task %s: %w", doc.Ref(), err)
	}
	defs, err := ParseSteps(r.steps, body.Steps)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", doc.Ref(), err)
	}
	return &Task{ID: doc.ID, Version: doc.Version, Steps: defs}, nil
}
