package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundle"
)

// runsEvals reports whether `agent-env run` runs the bundle's evals: when
// --eval selects some, or the bundle has evals and --task selects none.
func runsEvals(m *bundle.Materialised, req runRequest) bool {
	return len(req.evals) > 0 || (len(m.Evals) > 0 && len(req.tasks) == 0)
}

func evalEntities(m *bundle.Materialised) []bundle.Entity {
	out := make([]bundle.Entity, 0, len(m.Evals))
	for _, e := range m.Evals {
		out = append(out, e.Entity)
	}
	return out
}

func printEvalsDryRun(d *deps, m *bundle.Materialised, req runRequest) error {
	sel, err := bundle.SelectEvals(m, req.evals)
	if err != nil {
		return err
	}
	for _, e := range sel {
		fmt.Fprintf(d.stdout, "  %s (%d tasks)\n", e.File, len(e.Tasks))
	}
	return nil
}

// runBundleEvals runs the selected evals of a bundle, each task once, and
// prints a results table per eval.
func runBundleEvals(ctx context.Context, d *deps, r *runner.Runner, st *storeSet, m *bundle.Materialised, req runRequest, lines io.Writer) error {
	if req.keep {
		return errors.New("--keep keeps the sandboxes of tasks, and evals tear down each run: select tasks with --task")
	}
	prog := d.newProgress() // a spinner for long steps, on a terminal only (progress.go)
	defer prog.Close()
	runs, skipped, err := bundle.RunEvals(ctx, r, d.services(ctx, st, registry.LocalPrefix), m, req.evals, &bundle.RunOptions{
		Model: req.model, Sandbox: sandboxSpec(req.sandbox.both), EnvSandbox: sandboxSpec(req.sandbox.env), AgentSandbox: sandboxSpec(req.sandbox.agent),
		Documents: st.Local, Out: prog.Writer(lines),
		OnStepStart: func(label string, i, n int, sd *runner.StepDef) {
			prog.Start(label+"|"+sd.ID, fmt.Sprintf("[%s] step %d/%d %s (%s)", label, i+1, n, sd.ID, sd.Type))
		},
		OnStepComplete: func(label string, _, _ int, sd *runner.StepDef, _ float64, _ error) { prog.Done(label + "|" + sd.ID) },
	})
	prog.Close()
	failed := false
	if req.out.structured() {
		out := make([]evalReportJSON, 0, len(runs))
		for _, er := range runs {
			out = append(out, evalReportJSON{ID: er.Eval.Entity.ID, Version: er.Eval.Entity.Version, Report: er.Report})
			failed = failed || er.Report.Failed()
		}
		if jerr := printJSON(d, map[string]any{"evals": out, "skipped": skipped}); jerr != nil {
			return jerr
		}
	} else {
		for _, er := range runs {
			fmt.Fprintf(d.stdout, "\n%s v%d:\n", er.Eval.File, er.Eval.Entity.Version)
			printEvalTable(d.stdout, er.Report)
			failed = failed || er.Report.Failed()
		}
		for _, s := range skipped {
			fmt.Fprintf(d.stdout, "  %s: skipped\n", s)
		}
	}
	if err != nil {
		return err
	}
	if failed {
		return errSilent
	}
	return nil
}
