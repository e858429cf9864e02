package gwclient

import (
	"context"
	"fmt"

	"github.com/agentenv/agentenv/runner"
)

// Env is a deployed env as the env steps use it.
type Env struct {
	EnvID string
	Entry map[string]any // the deployed_envs[] entry
	// Gateway is the env's gateway; nil for an env deployed with the
	// server topology (use Server and CallTool, which work on both).
	Gateway *Client
	// Servers are the backing servers' environment names.
	Servers []string
}

// ForEnv resolves env_id (and env_step_id) in the run context to its
// gateway, or to its one server for the server topology; a gateway env
// without a gateway_url is refused.
func ForEnv(rc *runner.RunContext, envID, envStepID string) (*Env, error) {
	e, err := rc.EnvEntry(envID, envStepID)
	if err != nil {
		return nil, fmt.Errorf("env_id: %w", err)
	}
	out := &Env{EnvID: envID, Entry: e}
	gw, _ := e["gateway_url"].(string)
	switch {
	case ServerTopology(e):
		if serverBase(e) == "" {
			return nil, fmt.Errorf("env_id %q: the deployed env has no environment_card_url", envID)
		}
	case gw == "":
		return nil, fmt.Errorf("env_id %q: the deployed env has no gateway_url", envID)
	default:
		out.Gateway = New(gw, nil)
		out.Gateway.token = &tokenSource{get: func(ctx context.Context) string { return ControlToken(ctx, rc, e) }}
	}
	if list, ok := e["mcp_servers"].([]any); ok {
		for _, s := range list {
			if n, _ := s.(string); n != "" {
				out.Servers = append(out.Servers, n)
			}
		}
	}
	if len(out.Servers) == 0 {
		if n, _ := e["environment_name"].(string); n != "" {
			out.Servers = []string{n}
		}
	}
	return out, nil
}
