package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/agentenv/agentenv/runner"
)

// taskCreateJSON is `task create --json`: the stored task, or
// {"saved": false, "problems": [...]} (exit 1) when parsing or preflight
// refuses it, one line per problem.
func taskCreateJSON(ctx context.Context, d *deps, id, file string, skip bool) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	st, err := d.openStores(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	r := runner.New(&runner.Options{Steps: d.steps(), Logger: d.logger()})
	type stepRow struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Version int    `json:"version"`
	}
	var rows []stepRow
	t, err := r.CreateTask(ctx, st.docsFor(id), d.services(ctx, st, id), id, data, &runner.CreateTaskOptions{
		SkipValidation: skip,
		OnStep: func(_, _ int, sd *runner.StepDef, v int) {
			rows = append(rows, stepRow{ID: sd.ID, Type: sd.Type, Version: v})
		},
	})
	var pe *runner.PreflightError
	if errors.As(err, &pe) {
		probs := make([]string, 0, len(pe.Problems))
		for _, p := range pe.Problems {
			probs = append(probs, fmt.Sprint(p))
		}
		if err := printJSON(d, map[string]any{"saved": false, "problems": probs}); err != nil {
			return err
		}
		return errSilent
	}
	var te *runner.TaskError
	if errors.As(err, &te) {
		if err := printJSON(d, map[string]any{"saved": false, "problems": te.Lines()}); err != nil {
			return err
		}
		return errSilent
	}
	if err != nil {
		return err
	}
	return printJSON(d, map[string]any{"saved": true, "id": t.ID, "version": t.Version, "steps": rows})
}
