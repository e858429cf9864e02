package envgates

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentenv/agentenv/runner"
)

// TypeEnvAssessment is verify_mcp_env_assessment's type name.
const TypeEnvAssessment = "verify_mcp_env_assessment"

// GateToolCorrectness is its gate key.
const GateToolCorrectness = "mcp_tool_correctness"

// ToolCorrectnessPrompt asks an agent bound to the env to exercise every
// tool and answer in the shape verify_mcp_env_assessment reads.
const ToolCorrectnessPrompt = `You are validating an MCP environment. Call every tool you have at least once ` +
	`with sensible arguments and judge whether it behaves as its description says. ` +
	`Answer with JSON only: {"results":[{"tool":"<name>","passed":true|false,"reason":"<why>"}]}`

// EnvAssessmentInfo registers verify_mcp_env_assessment.
func EnvAssessmentInfo() runner.StepInfo {
	return runner.StepInfo{Type: TypeEnvAssessment, New: func() runner.Step { return new(EnvAssessment) }}
}

// EnvAssessment is verify_mcp_env_assessment: it reads the answer of an
// agent that exercised the env's tools (prompt_id, usually prompted with
// ToolCorrectnessPrompt) as {"results":[{tool, passed, reason}]} and
// records the verdict: passed when there is at least one result and every
// result passed. An agent error or an answer that is not that JSON fails
// the gate. Details go to metadata.mcp_tool_correctness_validation.
type EnvAssessment struct {
	EnvID     string `json:"env_id"`
	PromptID  string `json:"prompt_id"`
	EnvStepID string `json:"env_step_id,omitempty"`
}

var (
	_ runner.Step         = (*EnvAssessment)(nil)
	_ runner.Validator    = (*EnvAssessment)(nil)
	_ runner.EntityRefser = (*EnvAssessment)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *EnvAssessment) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.EnvRef("env_id")}
}

// Validate implements runner.Validator.
func (c *EnvAssessment) Validate() error {
	if c.EnvID == "" {
		return runner.Required("env_id")
	}
	if c.PromptID == "" {
		return runner.Required("prompt_id")
	}
	return nil
}

// Run implements runner.Step.
func (c *EnvAssessment) Run(_ context.Context, rc *runner.RunContext) error {
	pr, err := rc.PromptResponse(c.PromptID)
	if err != nil {
		return fmt.Errorf("prompt_id: %w", err)
	}
	if _, err := rc.EnvEntry(c.EnvID, c.EnvStepID); err != nil {
		return fmt.Errorf("env_id: %w", err)
	}
	details := map[string]any{"env_id": c.EnvID, "prompt_id": c.PromptID, "results": []any{}}
	var problems []string
	switch {
	case pr.ErrorType != "":
		details["error"] = "Agent error: " + pr.ErrorType
		problems = append(problems, fmt.Sprintf("the assessing agent failed (%s): %s", pr.ErrorType, pr.ErrorMessage))
	default:
		results, err := parseAssessment(pr.Response)
		if err != nil {
			details["error"] = err.Error()
			problems = append(problems, err.Error())
			break
		}
		details["results"] = results
		details["total_tools"] = len(results)
		if len(results) == 0 {
			problems = append(problems, "the assessment lists no tool")
		}
		for i, r := range results {
			if ok, _ := r["passed"].(bool); !ok {
				tool, _ := r["tool"].(string)
				if tool == "" {
					tool = fmt.Sprintf("result %d", i)
				}
				reason, _ := r["reason"].(string)
				problems = append(problems, strings.TrimSuffix(fmt.Sprintf("tool %s failed: %s", tool, reason), ": "))
			}
		}
	}
	record(rc, GateToolCorrectness, "mcp_tool_correctness_validation", details, problems)
	return nil
}

// parseAssessment decodes {"results":[...]} from an answer, allowing a
// fenced code block around it (models add one).
func parseAssessment(s string) ([]map[string]any, error) {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "{"); i > 0 && strings.HasPrefix(s, "```") {
		s = strings.TrimSpace(strings.TrimSuffix(s[i:], "```"))
	}
	var v struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("invalid JSON response: %v", err)
	}
	return v.Results, nil
}
