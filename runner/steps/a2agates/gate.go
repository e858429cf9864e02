package a2agates

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/agentenv/agentenv/internal/a2aclient"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps/envgates"
)

// check inspects one agent: it returns details for the record and the
// problems found; skip names why the gate does not apply ("" = it does).
type check func(ctx context.Context, a *agent) (details map[string]any, problems []string, skip string)

// agent is the checked agent: its client and card.
type agent struct {
	name string
	c    *a2aclient.Client
	card json.RawMessage
	// timeout bounds waits for a task to finish.
	timeout time.Duration
}

// Gate is one verify_a2a_* step.
type Gate struct {
	// AgentName is the deployed agent to check; "" means default-agent.
	AgentName string `json:"agent_name,omitempty"`
	// TimeoutSeconds bounds each wait for the agent (a task to finish);
	// zero means 120.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`

	typ, gate string
	run       check
}

var (
	_ runner.Step      = (*Gate)(nil)
	_ runner.Validator = (*Gate)(nil)
)

// Validate implements runner.Validator.
func (g *Gate) Validate() error {
	if g.TimeoutSeconds < 0 {
		return runner.Invalid("timeout_seconds", "must not be negative, got %v", g.TimeoutSeconds)
	}
	return nil
}

// Run implements runner.Step.
func (g *Gate) Run(ctx context.Context, rc *runner.RunContext) error {
	name := g.AgentName
	if name == "" {
		name = runner.DefaultAgentName
	}
	entry, err := rc.AgentEntry(name)
	if err != nil {
		return fmt.Errorf("agent_name: %w", err)
	}
	api, _ := entry["api_url"].(string)
	if api == "" {
		return fmt.Errorf("agent_name %q: the deployed agent has no api_url", name)
	}
	timeout := 120 * time.Second
	if g.TimeoutSeconds > 0 {
		timeout = time.Duration(g.TimeoutSeconds * float64(time.Second))
	}
	a := &agent{name: name, c: a2aclient.New(api, &http.Client{Timeout: 60 * time.Second}), timeout: timeout}
	details := map[string]any{"agent_name": name}
	var problems []string
	if a.card, err = a.c.Card(ctx); err != nil {
		problems = []string{fmt.Sprintf("agent card not readable: %v", err)}
	} else {
		d, p, skip := g.run(ctx, a)
		for k, v := range d {
			details[k] = v
		}
		if skip != "" {
			details["skipped"] = skip
			rc.SetMetadataEntry("validated_a2a", g.gate, details)
			rc.SetVerification(g.gate, runner.Verification{Score: 1, Results: []runner.Row{
				{"gate": g.gate, "result": true, "score": 1.0, "skipped": true, "justification": skip}}})
			return nil
		}
		problems = p
	}
	rc.SetVerification(g.gate, envgates.Verdict(g.gate, details, problems))
	rc.SetMetadataEntry("validated_a2a", g.gate, details)
	rc.Logger().Info("a2a gate", "gate", g.gate, "agent_name", name, "passed", len(problems) == 0)
	return nil
}
