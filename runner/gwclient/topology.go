package gwclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentenv/agentenv/envsdk/envclient"
	"github.com/agentenv/agentenv/internal/mcpdial"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
)

// An env deployed with the server topology (env_provider_type "server")
// has no gateway: its one server is reached directly, for its data plane,
// its extensions and its tools (over MCP). What only a gateway offers
// (triggers, the virtual clock, role tool rules) is refused with a
// *NoGatewayError.

// ErrNoGateway is matched by every *NoGatewayError.
var ErrNoGateway = errors.New("the env has no gateway")

// NoGatewayError is a step asking a server-topology env for what only a
// gateway offers.
type NoGatewayError struct {
	Step  string // the step type ("register_env_triggers")
	EnvID string
	// Need says what needs the gateway ("triggers").
	Need string
}

func (e *NoGatewayError) Error() string {
	return fmt.Sprintf("%s: env_id %q is deployed with the server topology (env_provider_type server), which runs no gateway; %s need one (register the env with --env-provider-type gateway)",
		e.Step, e.EnvID, e.Need)
}

// Is makes errors.Is(err, ErrNoGateway) hold.
func (e *NoGatewayError) Is(target error) bool { return target == ErrNoGateway }

// ServerTopology reports whether a deployed_envs[] entry was deployed with
// the server topology.
func ServerTopology(entry map[string]any) bool {
	t, _ := entry["env_provider_type"].(string)
	return t == envdeploy.ProviderServer
}

// ForGateway is ForEnv for a step that needs the env's gateway: a
// server-topology env is a *NoGatewayError naming step and need.
func ForGateway(rc *runner.RunContext, envID, envStepID, step, need string) (*Env, error) {
	env, err := ForEnv(rc, envID, envStepID)
	if err != nil {
		return nil, err
	}
	if env.Gateway == nil {
		return nil, &NoGatewayError{Step: step, EnvID: envID, Need: need}
	}
	return env, nil
}

// serverBase is the base URL of a server-topology env: where its card
// was read.
func serverBase(entry map[string]any) string {
	u, _ := entry["environment_card_url"].(string)
	return strings.TrimSuffix(u, protocol.EnvCardPath)
}

// Server is the data-plane client of backing server name: through the
// gateway's proxy, or the server itself in the server topology.
func (e *Env) Server(name string) *envclient.Client {
	if e.Gateway == nil {
		return envclient.New(serverBase(e.Entry), nil)
	}
	return e.Gateway.Server(name)
}

// CallTool calls a tool as role: through the gateway's /step, or over
// the server's own MCP endpoint in the server topology, where there are
// no roles to act as (role "" or VerifierRole only).
func (e *Env) CallTool(ctx context.Context, role, tool string, args map[string]any) (*ToolResult, error) {
	if e.Gateway != nil {
		return e.Gateway.CallTool(ctx, role, tool, args)
	}
	if role != "" && role != VerifierRole {
		return nil, fmt.Errorf("acting as role %q needs a gateway; env %s is deployed with the server topology (env_provider_type server)", role, e.EnvID)
	}
	u, _ := e.Entry["mcp_url"].(string)
	return callToolMCP(ctx, u, tool, args)
}

// callToolMCP calls tool over the MCP endpoint u.
func callToolMCP(ctx context.Context, u, tool string, args map[string]any) (*ToolResult, error) {
	c, err := mcpdial.Dial(ctx, u, "agentenv-runner")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("MCP %s tools/call %s: %w", u, tool, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var out ToolResult
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
