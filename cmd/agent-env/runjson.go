package main

import (
	"github.com/agentenv/agentenv/runner/bundle"
)

// runReportJSON is what `agent-env run --json` prints on stdout (the step
// lines then go to stderr): the stored entities and one row per task run.
func runReportJSON(m *bundle.Materialised, rep *bundle.Report) map[string]any {
	entities := make([]map[string]any, 0, len(m.Artifacts)+len(m.Tasks))
	add := func(e bundle.Entity) {
		entities = append(entities, map[string]any{"path": e.Path, "id": e.ID, "version": e.Version, "status": e.Status})
	}
	for _, e := range m.Artifacts {
		add(e)
	}
	for _, t := range m.Tasks {
		add(t.Entity)
	}
	tasks := make([]map[string]any, 0, len(rep.Runs))
	for _, tr := range rep.Runs {
		scores := make([]map[string]any, 0, len(tr.Scores))
		for _, s := range tr.Scores {
			scores = append(scores, map[string]any{"step_id": s.StepID, "verifier_id": s.VerifierID, "score": s.Score})
		}
		row := map[string]any{"file": tr.Task.File, "task_id": tr.Task.Task.ID, "task_version": tr.Task.Entity.Version,
			"outcome": tr.Outcome, "scores": scores, "seconds": tr.Seconds, "instance_id": nil, "status": nil, "error": nil}
		if tr.Result != nil {
			row["instance_id"], row["status"] = tr.Result.InstanceID, tr.Result.Status
		}
		if tr.Err != nil {
			row["error"] = tr.Err.Error()
		}
		tasks = append(tasks, row)
	}
	skipped := rep.Skipped
	if skipped == nil {
		skipped = []string{}
	}
	return map[string]any{"bundle": m.Bundle.IDRoot, "entities": entities, "tasks": tasks, "skipped": skipped,
		"torn_down": rep.TornDown, "failed": rep.Failed()}
}
