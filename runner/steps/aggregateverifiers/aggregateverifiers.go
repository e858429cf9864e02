// Package aggregateverifiers is the aggregate_verifiers step: merge the
// rows of several verifiers into one score.
package aggregateverifiers

import (
	"context"
	"fmt"

	"github.com/agentenv/agentenv/runner"
)

// Type is the step type name.
const Type = "aggregate_verifiers"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields.
type Config struct {
	VerifierIDs     []string          `json:"verifier_ids"`
	ScoreAggregator runner.Aggregator `json:"score_aggregator,omitempty"` // weighted_average
	VerifierID      string            `json:"verifier_id,omitempty"`
}

var (
	_ runner.Step      = (*Config)(nil)
	_ runner.Validator = (*Config)(nil)
)

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if len(c.VerifierIDs) == 0 {
		return runner.Required("verifier_ids")
	}
	seen := map[string]bool{}
	for _, id := range c.VerifierIDs {
		if id == "" || seen[id] {
			return runner.Invalid("verifier_ids", "ids must be non-empty and distinct, got %q", c.VerifierIDs)
		}
		seen[id] = true
	}
	return nil
}

// Run implements runner.Step. A source written by another aggregate (no
// rows) counts as one row carrying its score.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	var rows []runner.Row
	for _, id := range c.VerifierIDs {
		v, err := rc.Verification(id)
		if err != nil {
			return fmt.Errorf("verifier_ids: %w", err)
		}
		if v.SourceVerifierIDs != nil {
			rows = append(rows, runner.Row{"result": v.Score >= 1, "score": v.Score})
			continue
		}
		rows = append(rows, v.Results...)
	}
	agg := c.ScoreAggregator
	if agg == "" {
		agg = runner.WeightedAverage
	}
	id := runner.VerifierIDOrNew(c.VerifierID)
	rc.SetVerification(id, runner.Verification{Score: agg.Aggregate(rows), SourceVerifierIDs: append([]string{}, c.VerifierIDs...)})
	return nil
}
