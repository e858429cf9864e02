// Package rubricsverifier is the rubrics_verifier step: a judge model
// grades a prompt's response (and the agent's trajectory) against
// criteria, through an OpenAI-compatible chat-completions call (the
// direct judge; the agent judge is a later phase, and its fields are
// refused at validation rather than ignored). Rows
// {id, criterion, weight, result, score, justification} go to
// metadata.verifications[verifier_id].
package rubricsverifier

import (
	"bytes"
	"context"
	"encoding/json"
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
	Criteria             []Criterion       `json:"criteria"`
	PromptID             string            `json:"prompt_id"`
	DefaultModel         string            `json:"default_model,omitempty"`
	DefaultModelAPIBase  string            `json:"default_model_api_base,omitempty"`
	ScoreAggregator      runner.Aggregator `json:"score_aggregator,omitempty"`
	VerifierID           string            `json:"verifier_id,omitempty"`
	AgentName            string            `json:"agent_name,omitempty"`
	TrajectoryFilter     map[string]any    `json:"trajectory_filter,omitempty"`
	MaxThinkingTokens    *int              `json:"max_thinking_tokens,omitempty"`
	Effort               string            `json:"effort,omitempty"`
	UseAgentJudge        *bool             `json:"use_agent_judge,omitempty"`
	UseTrajectory        *bool             `json:"use_trajectory,omitempty"` // true
	JudgeA2AAgentID      string            `json:"judge_a2a_agent_id,omitempty"`
	JudgeSandboxType     string            `json:"judge_sandbox_type,omitempty"`
	JudgePriority        *int              `json:"judge_priority,omitempty"`
	JudgeTimeoutSeconds  *float64          `json:"judge_timeout_seconds,omitempty"` // 1000
	OutputFormat         string            `json:"output_format,omitempty"`         // rubric_binary
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
	if err := c.unsupported(); err != nil {
		return err
	}
	if c.OutputFormat != "" && c.OutputFormat != "rubric_binary" {
		return runner.Invalid("output_format", "only rubric_binary is supported by this build")
	}
	if c.JudgeTimeoutSeconds != nil && *c.JudgeTimeoutSeconds <= 0 {
		return runner.Invalid("judge_timeout_seconds", "must be positive")
	}
	return nil
}

// unsupported refuses fields this build parses but does not act on, so a
// task never runs with a setting silently dropped: the agent judge and its
// knobs, and the judge-call tuning the direct judge does not send.
// use_agent_judge: false (what reference tasks spell out) is accepted.
func (c *Config) unsupported() error {
	const notYet = "is not supported yet by rubrics_verifier"
	switch {
	case c.UseAgentJudge != nil && *c.UseAgentJudge:
		return runner.Invalid("use_agent_judge", "the agent judge %s; remove it or set it to false for the direct judge", notYet)
	case c.JudgeA2AAgentID != "":
		return runner.Invalid("judge_a2a_agent_id", "%s (it belongs to the agent judge)", notYet)
	case c.JudgeSandboxType != "":
		return runner.Invalid("judge_sandbox_type", "%s (it belongs to the agent judge)", notYet)
	case c.JudgePriority != nil:
		return runner.Invalid("judge_priority", "%s (it belongs to the agent judge)", notYet)
	case c.AgentName != "":
		return runner.Invalid("agent_name", "%s", notYet)
	case len(c.TrajectoryFilter) > 0:
		return runner.Invalid("trajectory_filter", "%s", notYet)
	case c.MaxThinkingTokens != nil:
		return runner.Invalid("max_thinking_tokens", "%s", notYet)
	case c.Effort != "":
		return runner.Invalid("effort", "%s", notYet)
	}
	return nil
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
	base, key := c.endpoint(rc)
	if base == "" {
		return fmt.Errorf("rubrics_verifier: no judge model endpoint configured (default_model_api_base, judge_litellm_base_url, litellm_base_url or LITELLM_BASE_URL)")
	}
	model := c.DefaultModel
	if model == "" {
		model = DefaultModel
	}
	traj := ""
	if c.UseTrajectory == nil || *c.UseTrajectory {
		traj = c.trajectory(ctx, rc, pr)
	}
	timeout := 1000 * time.Second
	if c.JudgeTimeoutSeconds != nil {
		timeout = time.Duration(*c.JudgeTimeoutSeconds * float64(time.Second))
	}
	content, err := chat(ctx, base, key, model, c.messages(pr, traj, rc), timeout)
	if err != nil {
		return fmt.Errorf("rubrics_verifier judge: %w", err)
	}
	verdicts := parseVerdicts(content)
	rows := make([]runner.Row, 0, len(c.Criteria))
	for _, cr := range c.Criteria {
		w := 1.0
		if cr.Weight != nil {
			w = *cr.Weight
		}
		row := runner.Row{"id": cr.ID, "criterion": cr.Criterion, "weight": w}
		v, ok := verdicts[cr.ID]
		switch {
		case !ok:
			row["result"], row["score"], row["justification"] = false, 0.0, "the judge gave no verdict for this criterion"
		default:
			row["result"], row["score"], row["justification"] = v.Result, b2f(v.Result), v.Justification
		}
		rows = append(rows, row)
	}
	rc.SetVerification(id, runner.Verification{Score: agg.Aggregate(rows), Results: rows})
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
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

// trajectory reads the prompt's stored trajectory (best effort, capped).
func (c *Config) trajectory(ctx context.Context, rc *runner.RunContext, pr map[string]any) string {
	objs := rc.Services().Objects
	u, _ := pr["agent_trajectory_object_url"].(string)
	if objs == nil || u == "" {
		return ""
	}
	k, err := objs.KeyOf(u)
	if err != nil {
		return ""
	}
	r, _, err := objs.Open(ctx, k)
	if err != nil {
		return ""
	}
	defer r.Close()
	b, _ := io.ReadAll(io.LimitReader(r, 200_000))
	return string(b)
}

type msg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (c *Config) messages(pr map[string]any, traj string, rc *runner.RunContext) []msg {
	sys := "You grade an AI agent's work against a rubric. For each criterion decide true (met) or false (not met). " +
		`Answer with one JSON object only: {"results":[{"id":"<criterion id>","result":true|false,"justification":"<one sentence>"}]}.`
	if c.GradingPolicyPrompt != "" {
		sys += "\n\nGrading policy:\n" + c.GradingPolicyPrompt
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Task given to the agent:\n%v\n\nThe agent's final response:\n%v\n", pr["prompt_text"], pr["response"])
	if traj != "" {
		fmt.Fprintf(&b, "\nThe agent's trajectory (JSON):\n%s\n", traj)
	}
	if len(c.ContextFactsForJudge) > 0 {
		snap := rc.Snapshot()
		b.WriteString("\nFacts:\n")
		for label, path := range c.ContextFactsForJudge {
			v, _ := json.Marshal(lookup(snap, path))
			fmt.Fprintf(&b, "- %s: %s\n", label, v)
		}
	}
	b.WriteString("\nCriteria:\n")
	for _, cr := range c.Criteria {
		fmt.Fprintf(&b, "- %s: %s\n", cr.ID, cr.Criterion)
	}
	return []msg{{Role: "system", Content: sys}, {Role: "user", Content: b.String()}}
}

func lookup(doc map[string]any, path string) any {
	var cur any = doc
	for _, seg := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[seg]
	}
	return cur
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

type verdict struct {
	Result        bool
	Justification string
}

// parseVerdicts reads {"results":[{id,result,justification}]} from the
// judge's text (the last JSON object in it).
func parseVerdicts(text string) map[string]verdict {
	out := map[string]verdict{}
	for end := strings.LastIndexByte(text, '}'); end >= 0; end = strings.LastIndexByte(text[:end], '}') {
		for start := strings.IndexByte(text, '{'); start >= 0 && start < end; {
			var v struct {
				Results []struct {
					ID            string `json:"id"`
					Result        any    `json:"result"`
					Justification string `json:"justification"`
				} `json:"results"`
			}
			if json.Unmarshal([]byte(text[start:end+1]), &v) == nil && v.Results != nil {
				for _, r := range v.Results {
					ok := false
					switch x := r.Result.(type) {
					case bool:
						ok = x
					case string:
						ok = strings.EqualFold(x, "true") || strings.EqualFold(x, "pass") || strings.EqualFold(x, "passed")
					}
					out[r.ID] = verdict{Result: ok, Justification: r.Justification}
				}
				return out
			}
			next := strings.IndexByte(text[start+1:], '{')
			if next < 0 {
				break
			}
			start += next + 1
		}
		if end == 0 {
			break
		}
	}
	return out
}
