// Package peeragents is the peer_agents step: push each source agent's
// routing table through its peer-agents extension (docs/protocol.md): one entry per peer with its name, A2A base URL, full card and
// description. Recorded in metadata.agent_peerings[].
package peeragents

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/agentenv/agentenv/internal/a2aclient"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
)

// Type is the step type name.
const Type = "peer_agents"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Peering is one source agent and the peers it may call.
type Peering struct {
	SourceAgentName string   `json:"source_agent_name"`
	PeerAgentNames  []string `json:"peer_agent_names"`
}

// Config is the step's fields.
type Config struct {
	Peerings []Peering `json:"peerings"`
}

var (
	_ runner.Step      = (*Config)(nil)
	_ runner.Validator = (*Config)(nil)
)

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if len(c.Peerings) == 0 {
		return runner.Required("peerings")
	}
	for i, p := range c.Peerings {
		if p.SourceAgentName == "" {
			return runner.Invalid("peerings", "peerings[%d].source_agent_name is required", i)
		}
		if len(p.PeerAgentNames) == 0 {
			return runner.Invalid("peerings", "peerings[%d].peer_agent_names is required", i)
		}
		for _, n := range p.PeerAgentNames {
			if n == p.SourceAgentName {
				return runner.Invalid("peerings", "peerings[%d]: agent %q lists itself", i, n)
			}
		}
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	hc := &http.Client{Timeout: 30 * time.Second}
	for _, p := range c.Peerings {
		src, err := rc.AgentEntry(p.SourceAgentName)
		if err != nil {
			return fmt.Errorf("source_agent_name: %w", err)
		}
		srcURL, _ := src["api_url"].(string)
		sc := a2aclient.New(srcURL, hc)
		card, err := sc.Card(ctx)
		if err != nil {
			return fmt.Errorf("agent %q: %w", p.SourceAgentName, err)
		}
		if !a2aclient.Advertises(card, protocol.URIPeerAgents) {
			return fmt.Errorf("agent %q does not advertise %s", p.SourceAgentName, protocol.URIPeerAgents)
		}
		peers := make([]map[string]any, 0, len(p.PeerAgentNames))
		for _, n := range p.PeerAgentNames {
			a, err := rc.AgentEntry(n)
			if err != nil {
				return fmt.Errorf("peer_agent_names: %w", err)
			}
			u, _ := a["api_url"].(string)
			pc, err := a2aclient.New(u, hc).Card(ctx)
			if err != nil {
				return fmt.Errorf("peer %q: %w", n, err)
			}
			var cardv map[string]any
			_ = json.Unmarshal(pc, &cardv)
			entry := map[string]any{"name": n, "url": u, "card": cardv}
			if d, _ := cardv["description"].(string); d != "" {
				entry["description"] = d
			}
			peers = append(peers, entry)
		}
		if _, err := sc.ExtOK(ctx, http.MethodPost, protocol.AgentPeerAgentsPath, map[string]any{"peers": peers}); err != nil {
			return fmt.Errorf("peer-agents set on %q: %w", p.SourceAgentName, err)
		}
		rc.AppendMetadata("agent_peerings", map[string]any{"step_id": rc.StepID(), "source_agent_name": p.SourceAgentName,
			"peer_agent_names": p.PeerAgentNames})
	}
	return nil
}
