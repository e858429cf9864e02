package runner

import (
	"context"
	"slices"

	"github.com/agentenv/agentenv/runner/envdeploy"
)

// HostedAgent is an agent that a run serves itself (an episode's
// in-process agentsdk endpoint) instead of deploying it in a sandbox.
type HostedAgent struct {
	// BaseURL is the agent's base URL: the card is at
	// BaseURL+"/.well-known/agent.json", A2A at BaseURL+"/a2a". It is
	// reachable from the host, so the agent must be given host-reachable
	// env MCP URLs (deployed_envs[].mcp_url), as for an on_host agent.
	BaseURL string
}

// AgentHost decides, per run, which agents the run serves itself. An
// episode installs one with WithAgentHost on the run's context.
type AgentHost interface {
	// HostedAgent returns the endpoint serving agentName, or ok=false to
	// deploy the agent as usual.
	HostedAgent(agentName string) (HostedAgent, bool)
}

type agentHostKey struct{}

// WithAgentHost returns ctx carrying h: the steps of a run started with
// that context consult it through HostedAgentFor. Why a context value: the
// override is scoped to one run (an episode), like a request-scoped value,
// and reaches every step without widening Services or RunContext.
func WithAgentHost(ctx context.Context, h AgentHost) context.Context {
	return context.WithValue(ctx, agentHostKey{}, h)
}

// HostedAgentFor is what deploy_agent calls first: when the run hosts
// agentName ("" = default-agent) it returns the endpoint to register as
// that agent (no sandbox is deployed; mcp-config, agent-config and
// prompts go to the endpoint as to any agent).
func HostedAgentFor(ctx context.Context, agentName string) (HostedAgent, bool) {
	h, _ := ctx.Value(agentHostKey{}).(AgentHost)
	if h == nil {
		return HostedAgent{}, false
	}
	if agentName == "" {
		agentName = DefaultAgentName
	}
	return h.HostedAgent(agentName)
}

// HostedAgentInstance is the agent instance deploy_agent records for a
// hosted agent: its endpoint as api_url, no sandbox (nothing to tear
// down), and for each bound env instance the env's host-reachable
// mcp_url, since the agent runs on the host.
func HostedAgentInstance(rc *RunContext, h HostedAgent, envInstances []string) *envdeploy.AgentInstance {
	urls := map[string]string{}
	for _, e := range rc.Envs() {
		if slices.Contains(envInstances, e.InstanceID) {
			urls[e.InstanceID] = e.MCPURL
		}
	}
	if envInstances == nil {
		envInstances = []string{}
	}
	return &envdeploy.AgentInstance{InstanceID: "hosted-" + RandomHex(8), Status: envdeploy.StatusDeployed, APIURL: h.BaseURL,
		A2AURL: h.BaseURL + "/", SandboxType: HostedSandboxType, EnvInstanceIDs: envInstances, EnvMCPURLs: urls}
}

// HostedSandboxType is the sandbox_type recorded for hosted agents.
const HostedSandboxType = "episode"
