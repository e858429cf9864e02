package protocol

// Agent-side (A2A) routes, extension URIs and defaults.
// URITrajectory and URITriggers are shared with env cards and
// declared in extensions.go.
const (
	URIMCPConfig   = "urn:agentenv:mcp-config/v1"
	URIAgentConfig = "urn:agentenv:agent-config/v1"
	URISkillConfig = "urn:agentenv:skill-config/v1"
	URIPeerAgents  = "urn:agentenv:peer-agents/v1"

	// A2APath is the default JSON-RPC path of an agent (the card url).
	A2APath = "/a2a"
	// AgentCardPath is the A2A well-known card path.
	AgentCardPath = "/.well-known/agent-card.json"
	// LegacyAgentCardPath is the older card path; the runner reads this one.
	LegacyAgentCardPath = "/.well-known/agent.json"
	// HealthPath answers 200 {"status":"ok"}.
	HealthPath = "/health"

	AgentMCPConfigPath  = "/ext/mcp-config"
	AgentConfigPath     = "/ext/agent-config"
	AgentTrajectoryPath = "/ext/trajectory"
	AgentPeerAgentsPath = "/ext/peer-agents"

	// DefaultA2AHost and DefaultA2APort apply when A2A_HOST / A2A_PORT are unset.
	DefaultA2AHost = "0.0.0.0"
	DefaultA2APort = 8000

	// A2AProtocolVersion is the A2A version agents announce.
	A2AProtocolVersion = "0.3.0"
	// HeaderA2AExtensions lists requested (inbound) and activated
	// (outbound) A2A extension URIs.
	HeaderA2AExtensions = "X-A2A-Extensions"
)

// StatusResponse is the free-form {"status": "..."} answer of several
// agent extension operations.
type StatusResponse struct {
	Status string `json:"status"`
}

// Values of StatusResponse.Status.
const (
	StatusAdded   = "added"
	StatusUpdated = "updated"
)
