package universegates

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/agentenv/agentenv/runner"
)

// TypeCombine is combine_universe_verdicts's type name.
const TypeCombine = "combine_universe_verdicts"

// ServiceCriterionPrefix starts a judge criterion id about one server
// ("service_preserved__<server>"); other flagged criteria are
// cross-cutting and land under CrossService.
const (
	ServiceCriterionPrefix = "service_preserved__"
	CrossService           = "(cross-service)"
)

// CombineInfo registers combine_universe_verdicts.
func CombineInfo() runner.StepInfo {
	return runner.StepInfo{Type: TypeCombine, New: func() runner.Step { return new(Combine) }}
}

// Combine is combine_universe_verdicts: it merges the agent judge's
// verdict (the verification judge_verifier_id, usually a rubrics_verifier
// over the round trip's file_artifact_universe) into the round trip's
// programmatic verdict and records the result as final. Each flagged
// criterion (result false, or no result and a score below 1) becomes a
// critical agent_judge issue of its server, or of CrossService, and makes
// that server and the whole verdict incompatible. Without a judge verdict
// the programmatic one is kept and marked agent_judge_skipped; without a
// round trip verdict there is nothing to combine and the step records
// nothing (a warning).
type Combine struct {
	EnvID                   string `json:"env_id"`
	UniverseArtifactID      string `json:"universe_artifact_id"`
	UniverseArtifactVersion int    `json:"universe_artifact_version"`
	JudgeVerifierID         string `json:"judge_verifier_id"`
}

var (
	_ runner.Step         = (*Combine)(nil)
	_ runner.Validator    = (*Combine)(nil)
	_ runner.EntityRefser = (*Combine)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Combine) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.EnvRef("env_id"), runner.ArtifactRef("universe_artifact_id", "universe_artifact_version")}
}

// Validate implements runner.Validator.
func (c *Combine) Validate() error {
	switch {
	case c.EnvID == "":
		return runner.Required("env_id")
	case c.UniverseArtifactID == "":
		return runner.Required("universe_artifact_id")
	case c.UniverseArtifactVersion == 0:
		return runner.Required("universe_artifact_version")
	case c.UniverseArtifactVersion < 0:
		return runner.Invalid("universe_artifact_version", "must be >= 1, got %d", c.UniverseArtifactVersion)
	case c.JudgeVerifierID == "":
		return runner.Required("judge_verifier_id")
	}
	return nil
}

// Run implements runner.Step.
func (c *Combine) Run(_ context.Context, rc *runner.RunContext) error {
	raw, ok := rc.Metadata(Gate)
	compat, _ := raw.(map[string]any)
	if !ok || compat == nil {
		rc.Logger().Warn("combine_universe_verdicts: no round trip verdict in the run; nothing to combine", "env_id", c.EnvID)
		return nil
	}
	if id, _ := compat["universe_artifact_id"].(string); id != "" && id != c.UniverseArtifactID {
		return runner.Invalid("universe_artifact_id", "the run's round trip verdict is for universe %q, not %q", id, c.UniverseArtifactID)
	}
	services, _ := compat["services"].(map[string]any)
	if services == nil {
		services = map[string]any{}
	}
	judge, err := rc.Verification(c.JudgeVerifierID)
	if err != nil {
		compat["agent_judge_skipped"] = true
		rc.Logger().Warn("combine_universe_verdicts: no judge verdict; keeping the programmatic one, marked agent_judge_skipped",
			"judge_verifier_id", c.JudgeVerifierID)
	} else {
		for _, r := range judge.Results {
			res, hasResult := r["result"].(bool)
			score, _ := r["score"].(float64)
			if hasResult && res || !hasResult && score >= 1 {
				continue
			}
			id, _ := r["id"].(string)
			detail, _ := r["justification"].(string)
			if detail == "" {
				detail = "agent judge flagged a major difference"
			}
			server, field := CrossService, id
			if s, ok := strings.CutPrefix(id, ServiceCriterionPrefix); ok {
				server, field = s, "(semantic)"
			}
			entry, _ := services[server].(map[string]any)
			if entry == nil {
				entry = map[string]any{"compatible": true, "issues": []Issue{}}
				services[server] = entry
			}
			issues := asIssues(entry["issues"])
			issues = append(issues, Issue{"entity": server, "field": field, "type": "agent_judge", "phase": "agent_judge",
				"critical": true, "detail": detail})
			entry["issues"], entry["compatible"] = issues, false
			compat["compatible"] = false
		}
		compat["agent_judge"] = map[string]any{"verifier_id": c.JudgeVerifierID, "score": judge.Score, "results": judge.Results}
	}
	compat["services"], compat["environments"], compat["final"] = services, services, true
	names := make([]string, 0, len(services))
	for name := range services {
		names = append(names, name)
	}
	sort.Strings(names)
	var problems []string
	for _, name := range names {
		entry, _ := services[name].(map[string]any)
		problems = append(problems, criticalProblems(name, asIssues(entry["issues"]))...)
	}
	Record(rc, compat, problems)
	rc.Logger().Info("universe verdicts combined", "env_id", c.EnvID, "compatible", compat["compatible"],
		"judge", fmt.Sprint(err == nil))
	return nil
}

// asIssues reads an issue list written by this package or decoded from a
// resumed run's JSON.
func asIssues(v any) []Issue {
	switch l := v.(type) {
	case []Issue:
		return l
	case []any:
		out := make([]Issue, 0, len(l))
		for _, e := range l {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}
