package bundle

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/eval"
)

// Eval is a materialised evals/<name>.toml.
type Eval struct {
	File   string // "evals/smoke.toml"
	Name   string
	Entity Entity
	Tasks  []eval.TaskRef // resolved: bundle names are bundle ids
}

// preparedEval is a parsed, checked eval file, not yet stored.
type preparedEval struct {
	ef   EvalFile
	id   string
	typ  string
	refs []eval.TaskRef
}

// prepareEvals parses every evals/<name>.toml and resolves its tasks: a
// bare name the bundle defines is that task; any other id must be in the
// store. It runs before anything is written, so a bad eval stores nothing.
func prepareEvals(ctx context.Context, b *Bundle, docs registry.DocumentStore) ([]preparedEval, error) {
	names := map[string]bool{}
	for _, t := range b.Tasks {
		names[t.Name] = true
	}
	var out []preparedEval
	for _, ef := range b.Evals {
		be, err := eval.ParseTOML(ef.File, ef.Raw)
		if err != nil {
			return nil, err
		}
		pe := preparedEval{ef: ef, id: b.IDRoot + "/" + ef.Name, typ: be.Type}
		if be.ID != "" {
			if !strings.HasPrefix(be.ID, registry.LocalPrefix) {
				return nil, fmt.Errorf("%w: %s: id: a bundle writes only %s ids, got %q", ErrInvalid, ef.File, registry.LocalPrefix, be.ID)
			}
			if err := registry.ValidateID(be.ID); err != nil {
				return nil, fmt.Errorf("%w: %s: id: %v", ErrInvalid, ef.File, err)
			}
			pe.id = be.ID
		}
		for i, r := range be.Tasks {
			if names[r.TaskID] {
				r.TaskID = b.IDRoot + "/" + r.TaskID
				pe.refs = append(pe.refs, r)
				continue
			}
			if !strings.Contains(r.TaskID, "/") && !strings.HasPrefix(r.TaskID, "@") {
				have := make([]string, 0, len(names))
				for n := range names {
					have = append(have, n)
				}
				sort.Strings(have)
				return nil, fmt.Errorf("%w: %s: tasks[%d]: unknown task %q: not in the bundle's tasks/ (have: %s)", ErrInvalid, ef.File, i, r.TaskID, strings.Join(have, ", "))
			}
			if _, err := docs.Get(ctx, registry.Tasks, r.Ref()); err != nil {
				return nil, fmt.Errorf("%w: %s: tasks[%d]: unknown task %s: not in the bundle's tasks/ nor in the store: %v", ErrInvalid, ef.File, i, r, err)
			}
			pe.refs = append(pe.refs, r)
		}
		if err := eval.CheckList(ef.File, "tasks", pe.refs); err != nil {
			return nil, err
		}
		out = append(out, pe)
	}
	return out, nil
}

// putEval stores one eval through the ledger, after the bundle's tasks: a
// version pinned on a bundle task must exist by then.
func putEval(ctx context.Context, st Stores, m *Materialised, pe preparedEval, dry bool) (Eval, error) {
	for i, r := range pe.refs {
		if r.TaskVersion == 0 || !strings.HasPrefix(r.TaskID, m.Bundle.IDRoot+"/") {
			continue
		}
		if _, err := st.Documents.Get(ctx, registry.Tasks, r.Ref()); err != nil && !(dry && errors.Is(err, registry.ErrNotFound)) {
			return Eval{}, fmt.Errorf("%w: %s: tasks[%d].version: %v", ErrInvalid, pe.ef.File, i, err)
		}
	}
	cfg := map[string]any{"type": pe.typ, "tasks": pe.refs}
	e, err := putLedgered(ctx, st, m.Bundle, registry.Evals, pe.id, pe.ef.File, digestOf("eval", cfg, nil), dry,
		func() (int, error) {
			ev, err := eval.Put(ctx, st.Documents, pe.id, pe.typ, pe.refs)
			if err != nil {
				return 0, err
			}
			return ev.Version, nil
		})
	if err != nil {
		return Eval{}, fmt.Errorf("%s: %w", pe.ef.File, err)
	}
	return Eval{File: pe.ef.File, Name: pe.ef.Name, Entity: e, Tasks: pe.refs}, nil
}

// EvalRun is one eval of a bundle run.
type EvalRun struct {
	Eval   Eval
	Report *eval.Report
}

// RunEvals runs the selected evals of a materialised bundle (names as
// given to --eval; none = every eval), each task of an eval once, at most
// Concurrency at once, every run torn down as it ends. Tasks no selected
// eval names are returned as skipped. On cancellation it returns the
// reports so far with the cause.
func RunEvals(ctx context.Context, r *runner.Runner, svc *runner.Services, m *Materialised, names []string, o *RunOptions) ([]EvalRun, []string, error) {
	var opts RunOptions
	if o != nil {
		opts = *o
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	selected, err := SelectEvals(m, names)
	if err != nil {
		return nil, nil, err
	}
	byID := map[string]Task{}
	for _, t := range m.Tasks {
		byID[t.Task.ID] = t
	}
	used := map[string]bool{}
	group := registry.RandomSuffix(32)
	var runs []EvalRun
	for _, ev := range selected {
		jobs := make([]eval.Job, 0, len(ev.Tasks))
		for i, ref := range ev.Tasks {
			t, ok := byID[ref.TaskID]
			name := ref.String()
			if ok {
				name = t.File
			}
			var task *runner.Task
			if ok && (ref.TaskVersion == 0 || ref.TaskVersion == t.Entity.Version) {
				task = t.Task
			} else {
				task, err = r.LoadTask(ctx, opts.Documents, ref.Ref())
				if err != nil {
					return runs, nil, fmt.Errorf("%s: tasks[%d]: %w", ev.File, i, err)
				}
			}
			used[ref.TaskID] = true
			jobs = append(jobs, eval.Job{Name: name, Task: task, Services: svc, Documents: opts.Documents})
		}
		if opts.Out != nil {
			fmt.Fprintf(opts.Out, "Running %s v%d (%d tasks)\n", ev.File, ev.Entity.Version, len(jobs))
		}
		init := initialContext(group, opts)
		init["metadata"].(map[string]any)["eval_id"] = ev.Entity.ID
		rep, err := eval.Run(ctx, r, jobs, &eval.RunOptions{K: 1, MaxConcurrency: opts.Concurrency, Initial: init, Runner: "bundle",
			Out: opts.Out, OnStepStart: opts.OnStepStart, OnStepComplete: opts.OnStepComplete})
		if rep != nil {
			runs = append(runs, EvalRun{Eval: ev, Report: rep})
		}
		if err != nil {
			return runs, nil, err
		}
	}
	var skipped []string
	for _, t := range m.Tasks {
		if !used[t.Task.ID] {
			skipped = append(skipped, t.File)
		}
	}
	return runs, skipped, nil
}

// SelectEvals picks the evals --eval names ("smoke" or
// "evals/smoke.toml"); none = every eval.
func SelectEvals(m *Materialised, names []string) ([]Eval, error) {
	if len(names) == 0 {
		return m.Evals, nil
	}
	var sel []Eval
	var missing []string
	for _, n := range names {
		n = strings.TrimSuffix(strings.TrimPrefix(n, "evals/"), ".toml")
		found := false
		for _, e := range m.Evals {
			if e.Name == n {
				sel, found = append(sel, e), true
				break
			}
		}
		if !found {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		if len(m.Evals) == 0 {
			return nil, fmt.Errorf("--eval %s: the bundle has no evals/<name>.toml", strings.Join(missing, ", "))
		}
		have := make([]string, 0, len(m.Evals))
		for _, e := range m.Evals {
			have = append(have, e.Name)
		}
		return nil, fmt.Errorf("--eval %s: no such eval in the bundle (have: %s)", strings.Join(missing, ", "), strings.Join(have, ", "))
	}
	return sel, nil
}
