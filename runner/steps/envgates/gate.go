package envgates

import (
	"github.com/agentenv/agentenv/runner"
)

// Gate keys: the verification ids the gates write, and the names
// validation_gate_aggregator's required_gates lists.
const (
	GateEnvCard       = "environment_card"
	GateEnvProtocol   = "environment_protocol"
	GateMCPToolSchema = "mcp_tool_schema"
)

// record writes an env gate's verdict: metadata.verifications[gate] and
// the details under metadata[detailKey].
func record(rc *runner.RunContext, gate, detailKey string, details map[string]any, problems []string) {
	rc.SetVerification(gate, Verdict(gate, details, problems))
	rc.SetMetadata(detailKey, details)
}

// Verdict is a gate's verification: score 1 and one "no problems" row
// when there are no problems, else score 0 with one row per problem. It
// also sets details["passed"] and details["problems"]. The agent gates
// (a2agates) record their verdicts with it too.
func Verdict(gate string, details map[string]any, problems []string) runner.Verification {
	passed := len(problems) == 0
	details["passed"] = passed
	if problems == nil {
		problems = []string{}
	}
	details["problems"] = problems
	rows := make([]runner.Row, 0, len(problems)+1)
	for _, p := range problems {
		rows = append(rows, runner.Row{"gate": gate, "result": false, "score": 0.0, "justification": p})
	}
	score := 0.0
	if passed {
		score = 1
		rows = append(rows, runner.Row{"gate": gate, "result": true, "score": 1.0, "justification": "no problems"})
	}
	return runner.Verification{Score: score, Results: rows}
}
