package rubricsverifier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
)

// Type is the step type name.
const Type = "rubrics_verifier"

// DefaultModel is the judge model when nothing names one.
const DefaultModel = "claude-sonnet-4-6"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Criterion is one rubric item.
type Criterion struct {
	ID        string   `json:"id"`
	Criterion string   `json:"criterion"`
	Weight    *float64 `json:"weight,omitempty"`
}

// Config is the step's fields.
type Config struct {
	Criteria            []Criterion       `json:"criteria"`
	PromptID            string            `json:"prompt_id"`
	DefaultModel        string            `json:"default_model,omitempty"`
	DefaultModelAPIBase string            `json:"default_model_api_base,omitempty"`
	ScoreAggregator     runner.Aggregator `json:"score_aggregator,omitempty"`
	VerifierID          string            `json:"verifier_id,omitempty"`
	AgentName           string            `json:"agent_name,omitempty"`
	TrajectoryFilter    *TrajectoryFilter `json:"trajectory_filter,omitempty"`
	MaxThinkingTokens   *int              `json:"max_thinking_tokens,omitempty"`
	Effort              string            `json:"effort,omitempty"`
	// UseAgentJudge: the reference defaults it to true; unset here means
	// the direct judge (see docs/steps.md: no default judge agent is
	// assumed to be registered in a store).
	UseAgentJudge        *bool             `json:"use_agent_judge,omitempty"`
	UseTrajectory        *bool             `json:"use_trajectory,omitempty"` // true
	JudgeA2AAgentID      string            `json:"judge_a2a_agent_id,omitempty"`
	JudgeSandboxType     string            `json:"judge_sandbox_type,omitempty"`
	JudgePriority        *int              `json:"judge_priority,omitempty"`
	JudgeTimeoutSeconds  *float64          `json:"judge_timeout_seconds,omitempty"` // 1000
	OutputFormat         OutputFormat      `json:"output_format,omitempty"`         // rubric_binary
	GradingPolicyPrompt  string            `json:"grading_policy_prompt,omitempty"`
	ContextFactsForJudge map[string]string `json:"context_facts_for_judge,omitempty"`
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{{Field: "judge_a2a_agent_id", Collection: string(registry.A2AAgents)}}
}

func (c *Config) agentJudgeOn() bool { return c.UseAgentJudge != nil && *c.UseAgentJudge }

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.PromptID == "" {
		return runner.Required("prompt_id")
	}
	if len(c.Criteria) == 0 {
		return runner.Required("criteria")
	}
	seen := map[string]bool{}
	for i, cr := range c.Criteria {
		if cr.ID == "" || cr.Criterion == "" {
			return runner.Invalid("criteria", "criteria[%d] needs id and criterion", i)
		}
		if seen[cr.ID] {
			return runner.Invalid("criteria", "duplicate criterion id %q", cr.ID)
		}
		seen[cr.ID] = true
	}
	if c.TrajectoryFilter != nil {
		if err := c.TrajectoryFilter.validate(); err != nil {
			return runner.Invalid("trajectory_filter", "%v", err)
		}
	}
	for label, path := range c.ContextFactsForJudge {
		if label == "" || path == "" || strings.HasPrefix(path, ".") || strings.HasSuffix(path, ".") || strings.Contains(path, "..") {
			return runner.Invalid("context_facts_for_judge", "each entry maps a label to a dotted path of the run context, got %q: %q", label, path)
		}
	}
	if c.JudgeTimeoutSeconds != nil && *c.JudgeTimeoutSeconds <= 0 {
		return runner.Invalid("judge_timeout_seconds", "must be positive")
	}
	if c.MaxThinkingTokens != nil && *c.MaxThinkingTokens < 0 {
		return runner.Invalid("max_thinking_tokens", "must not be negative")
	}
	return c.unsupported()
}

// unsupported refuses fields this build parses but cannot act on, so a
// task never runs with a setting silently dropped. The agent judge's
// knobs belong to it alone; the direct judge's chat call has no thinking
// settings.
func (c *Config) unsupported() error {
	const notYet = "is not supported yet by rubrics_verifier"
	if !c.agentJudgeOn() {
		const agentOnly = "applies to the agent judge only; set use_agent_judge to true"
		switch {
		case c.JudgeA2AAgentID != "":
			return runner.Invalid("judge_a2a_agent_id", agentOnly)
		case c.JudgeSandboxType != "":
			return runner.Invalid("judge_sandbox_type", agentOnly)
		case c.JudgePriority != nil:
			return runner.Invalid("judge_priority", agentOnly)
		case c.MaxThinkingTokens != nil:
			return runner.Invalid("max_thinking_tokens", "%s with the direct judge (the agent judge sends it through agent-config)", notYet)
		case c.Effort != "":
			return runner.Invalid("effort", "%s with the direct judge (the agent judge sends it through agent-config)", notYet)
		}
	}
	if c.AgentName != "" {
		return runner.Invalid("agent_name", "%s (prompt_id names the graded work)", notYet)
	}
	return nil
}

func (c *Config) model() string {
	if c.DefaultModel != "" {
		return c.DefaultModel
	}
	return DefaultModel
}

func (c *Config) timeout() time.Duration {
	if c.JudgeTimeoutSeconds != nil {
		return time.Duration(*c.JudgeTimeoutSeconds * float64(time.Second))
	}
	return 1000 * time.Second
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	id := runner.VerifierIDOrNew(c.VerifierID)
	agg := c.ScoreAggregator.OrDefault()
	pr, err := rc.PromptResponseEntry(c.PromptID)
	if err != nil {
		rc.SetVerification(id, runner.Verification{Score: 0, Results: []runner.Row{{"id": "missing_prompt", "result": false,
			"score": 0.0, "message": fmt.Sprintf("no response for prompt_id %q: %v", c.PromptID, err)}}})
		return nil
	}
	if et, _ := pr["error_type"].(string); et != "" {
		p, _ := rc.PromptResponse(c.PromptID)
		rc.SetVerification(id, runner.PromptErrorVerification(p))
		return nil
	}
	// The agent judge may bring its own model settings; the direct judge
	// cannot run without an endpoint.
	base, key := c.endpoint(rc)
	if base == "" && !c.agentJudgeOn() {
		return fmt.Errorf("rubrics_verifier: no judge model endpoint configured (default_model_api_base, judge_litellm_base_url, litellm_base_url or LITELLM_BASE_URL)")
	}
	w := c.collect(ctx, rc, pr)
	var answer string
	if c.agentJudgeOn() {
		answer, err = c.agentJudge(ctx, rc, id, w)
	} else {
		answer, err = chat(ctx, base, key, c.model(), []msg{{Role: "system", Content: c.systemPrompt()},
			{Role: "user", Content: c.userMessage(w)}}, c.timeout())
	}
	var rows []runner.Row
	switch {
	case errors.Is(err, errMalformed):
		rows = failRows(c.Criteria, err)
	case err != nil:
		return fmt.Errorf("rubrics_verifier judge: %w", err)
	default:
		rows, err = c.OutputFormat.grades(answer, c.Criteria)
	}
	if err != nil {
		rc.Logger().Warn("the judge's grade could not be read; every criterion scores 0", "verifier_id", id, "error", err)
	}
	rc.SetVerification(id, runner.Verification{Score: agg.Aggregate(rows), Results: rows})
	return nil
}

// failRows gives every criterion a failing row that says why.
func failRows(criteria []Criterion, err error) []runner.Row {
	rows := make([]runner.Row, 0, len(criteria))
	for _, cr := range criteria {
		row := baseRow(cr)
		row["result"], row["score"], row["justification"] = false, 0.0, err.Error()
		rows = append(rows, row)
	}
	return rows
}

func (c *Config) endpoint(rc *runner.RunContext) (string, string) {
	base := c.DefaultModelAPIBase
	for _, k := range []string{"judge_litellm_base_url", "litellm_base_url"} {
		if base == "" {
			base = rc.UserOverride(k)
		}
	}
	if base == "" {
		base = os.Getenv("LITELLM_BASE_URL")
	}
	key := rc.UserOverride("judge_litellm_api_key")
	if key == "" {
		key = rc.UserOverride("litellm_api_key")
	}
	if key == "" {
		key = os.Getenv("LITELLM_API_KEY")
	}
	return strings.TrimRight(base, "/"), key
}

type msg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chat is one non-streaming chat completion; the API key is sent only in
// the Authorization header and never appears in errors.
func chat(ctx context.Context, base, key, model string, msgs []msg, timeout time.Duration) (string, error) {
	body, _ := json.Marshal(map[string]any{"model": model, "messages": msgs, "temperature": 0})
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("POST %s/chat/completions: %w", base, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode != http.StatusOK {
		s := string(b)
		if len(s) > 300 {
			s = s[:300]
		}
		return "", fmt.Errorf("POST %s/chat/completions: HTTP %d: %s", base, resp.StatusCode, s)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) == 0 {
		return "", fmt.Errorf("judge answer is not a chat completion")
	}
	return out.Choices[0].Message.Content, nil
}
