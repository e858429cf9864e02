// Package promptverifier is the agent_prompt_response_verifier step:
// deterministic checks on the text of a prompt response.
package promptverifier

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentenv/agentenv/runner"
)

// Type is the step type name.
const Type = "agent_prompt_response_verifier"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Criterion is one check. response_contains passes when every needle
// occurs in the response; response_regex_present when the pattern matches
// somewhere (flags default to DOTALL).
type Criterion struct {
	Type      string   `json:"type"`
	Criterion string   `json:"criterion,omitempty"`
	Needles   []string `json:"needles,omitempty"`
	Pattern   string   `json:"pattern,omitempty"`
	Flags     []string `json:"flags,omitempty"`
	Weight    *float64 `json:"weight,omitempty"`
	ID        string   `json:"id,omitempty"`
}

// Config is the step's fields.
type Config struct {
	PromptID        string            `json:"prompt_id"`
	Criteria        []Criterion       `json:"criteria"`
	ScoreAggregator runner.Aggregator `json:"score_aggregator,omitempty"`
	VerifierID      string            `json:"verifier_id,omitempty"`

	compiled []*regexp.Regexp
}

var (
	_ runner.Step      = (*Config)(nil)
	_ runner.Validator = (*Config)(nil)
)

var flagNames = map[string]string{
	"IGNORECASE": "i", "I": "i", "MULTILINE": "m", "M": "m", "DOTALL": "s", "S": "s",
}

// Validate implements runner.Validator; it compiles the patterns.
func (c *Config) Validate() error {
	if c.PromptID == "" {
		return runner.Required("prompt_id")
	}
	if len(c.Criteria) == 0 {
		return runner.Required("criteria")
	}
	c.compiled = make([]*regexp.Regexp, len(c.Criteria))
	for i, cr := range c.Criteria {
		switch cr.Type {
		case "response_contains":
			if len(cr.Needles) == 0 {
				return runner.Invalid("criteria", "criterion %d: response_contains needs non-empty needles", i)
			}
			for _, n := range cr.Needles {
				if n == "" {
					return runner.Invalid("criteria", "criterion %d: an empty needle", i)
				}
			}
		case "response_regex_present":
			if cr.Pattern == "" {
				return runner.Invalid("criteria", "criterion %d: response_regex_present needs a pattern", i)
			}
			flags := cr.Flags
			if flags == nil {
				flags = []string{"DOTALL"}
			}
			var fs strings.Builder
			for _, f := range flags {
				g, ok := flagNames[strings.ToUpper(strings.TrimPrefix(f, "re."))]
				if !ok {
					return runner.Invalid("criteria", "criterion %d: unknown regex flag %q (IGNORECASE, MULTILINE, DOTALL)", i, f)
				}
				if !strings.Contains(fs.String(), g) {
					fs.WriteString(g)
				}
			}
			p := cr.Pattern
			if fs.Len() > 0 {
				p = "(?" + fs.String() + ")" + p
			}
			re, err := regexp.Compile(p)
			if err != nil {
				return runner.Invalid("criteria", "criterion %d: pattern: %v", i, err)
			}
			c.compiled[i] = re
		default:
			return runner.Invalid("criteria", "criterion %d: unknown type %q (response_contains, response_regex_present)", i, cr.Type)
		}
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	if c.compiled == nil {
		if err := c.Validate(); err != nil {
			return err
		}
	}
	id := runner.VerifierIDOrNew(c.VerifierID)
	pr, err := rc.PromptResponse(c.PromptID)
	if err != nil {
		// A prompt that never produced a response (its step failed and
		// was tolerated) scores 0 with a row saying why.
		rc.SetVerification(id, runner.Verification{Score: 0, Results: []runner.Row{{"id": "missing_prompt",
			"result": false, "score": 0.0, "message": fmt.Sprintf("no response for prompt_id %q: %v", c.PromptID, err)}}})
		return nil
	}
	if pr.ErrorType != "" {
		rc.SetVerification(id, runner.PromptErrorVerification(pr))
		return nil
	}
	rows := make([]runner.Row, 0, len(c.Criteria))
	for i, cr := range c.Criteria {
		row := runner.Row{"type": cr.Type, "criterion_index": i}
		if cr.Criterion != "" {
			row["criterion"] = cr.Criterion
		}
		if cr.ID != "" {
			row["id"] = cr.ID
		}
		if cr.Weight != nil {
			row["weight"] = *cr.Weight
		}
		var ok bool
		var why string
		switch cr.Type {
		case "response_contains":
			var missing []string
			for _, n := range cr.Needles {
				if !strings.Contains(pr.Response, n) {
					missing = append(missing, n)
				}
			}
			row["needles"] = cr.Needles
			ok = len(missing) == 0
			why = "all needles found"
			if !ok {
				why = fmt.Sprintf("missing %q", missing)
			}
		case "response_regex_present":
			row["pattern"] = cr.Pattern
			ok = c.compiled[i].MatchString(pr.Response)
			why = "pattern found"
			if !ok {
				why = "pattern not found"
			}
		}
		row["result"], row["justification"] = ok, why
		if ok {
			row["score"] = 1.0
		} else {
			row["score"] = 0.0
		}
		rows = append(rows, row)
	}
	agg := c.ScoreAggregator.OrDefault()
	rc.SetVerification(id, runner.Verification{Score: agg.Aggregate(rows), Results: rows})
	return nil
}
