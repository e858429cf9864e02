// Package agentext finds a deployed agent that must advertise an A2A
// extension, for the steps that drive one (add_skills through the
// skill-config extension, snapshot_agent_state through the snapshot
// extension): both refuse an agent whose stored card lacks it before any
// request, with the same message.
package agentext

import (
	"encoding/json"
	"fmt"

	"github.com/agentenv/agentenv/internal/a2aclient"
	"github.com/agentenv/agentenv/runner"
)

// Entry returns the deployed_agents[] entry of the agent called name
// (runner.DefaultAgentName when empty) and its resolved name. It fails
// naming the agent_name field when no such agent is deployed, and naming
// the extension when the agent's card does not advertise uri.
func Entry(rc *runner.RunContext, name, uri string) (map[string]any, string, error) {
	if name == "" {
		name = runner.DefaultAgentName
	}
	entry, err := rc.AgentEntry(name)
	if err != nil {
		return nil, name, fmt.Errorf("agent_name: %w", err)
	}
	card, _ := json.Marshal(entry["a2a_card"])
	if !a2aclient.Advertises(card, uri) {
		return nil, name, fmt.Errorf("agent %q does not advertise %s", name, uri)
	}
	return entry, name, nil
}
