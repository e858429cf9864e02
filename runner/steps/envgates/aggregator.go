package envgates

import (
	"context"
	"fmt"

	"github.com/agentenv/agentenv/runner"
)

// TypeGateAggregator is validation_gate_aggregator's type name.
const TypeGateAggregator = "validation_gate_aggregator"

// DefaultRequiredGates are the gates required when required_gates is
// empty. The reference requires mcp_tool_schema and mcp_tool_correctness;
// the latter (verify_mcp_env_assessment) grades a model-driven agent's use
// of the tools, which a put --validate cannot run without a model, so the
// default is the card, protocol and schema gates. spec_conformance is
// record-only by default, as in the reference.
var DefaultRequiredGates = []string{GateEnvCard, GateEnvProtocol, GateMCPToolSchema}

// GateAggregatorInfo registers validation_gate_aggregator.
func GateAggregatorInfo() runner.StepInfo {
	return runner.StepInfo{Type: TypeGateAggregator, New: func() runner.Step { return new(GateAggregator) }}
}

// GateAggregator is validation_gate_aggregator: it rolls the required
// gates' verdicts into metadata.validation_gate {passed, required_gates,
// failed_gates, missing_gates, skipped_gates}. A required gate with no
// verdict fails (fail closed). It records and never fails the step, so
// the enforcement stays in one place (put --validate).
type GateAggregator struct {
	EnvID         string   `json:"env_id"`
	RequiredGates []string `json:"required_gates,omitempty"`
}

var (
	_ runner.Step         = (*GateAggregator)(nil)
	_ runner.Validator    = (*GateAggregator)(nil)
	_ runner.EntityRefser = (*GateAggregator)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *GateAggregator) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.EnvRef("env_id")}
}

// Validate implements runner.Validator.
func (c *GateAggregator) Validate() error {
	if c.EnvID == "" {
		return runner.Required("env_id")
	}
	for i, g := range c.RequiredGates {
		if g == "" {
			return runner.Invalid("required_gates", "entry %d is empty", i)
		}
	}
	return nil
}

// Run implements runner.Step.
func (c *GateAggregator) Run(_ context.Context, rc *runner.RunContext) error {
	required := c.RequiredGates
	if len(required) == 0 {
		required = DefaultRequiredGates
	}
	all := rc.Verifications()
	failed, missing, skipped := []string{}, []string{}, []string{}
	for _, g := range required {
		v, ok := all[g]
		switch {
		case !ok:
			missing = append(missing, g)
		case allSkipped(v.Results):
			skipped = append(skipped, g)
		case v.Score < 1:
			failed = append(failed, g)
		}
	}
	summary := map[string]any{
		"env_id": c.EnvID, "passed": len(failed) == 0 && len(missing) == 0,
		"required_gates": required, "failed_gates": failed, "missing_gates": missing, "skipped_gates": skipped,
	}
	rc.SetMetadata("validation_gate", summary)
	rc.Logger().Info("validation gate", "env_id", c.EnvID, "passed", summary["passed"],
		"failed", fmt.Sprint(failed), "missing", fmt.Sprint(missing))
	return nil
}

// allSkipped: a verdict whose every row is skipped checked nothing.
func allSkipped(rows []runner.Row) bool {
	if len(rows) == 0 {
		return false
	}
	for _, r := range rows {
		if s, _ := r["skipped"].(bool); !s {
			return false
		}
	}
	return true
}
