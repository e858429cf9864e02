package envgates

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentenv/agentenv/envsdk/envconformance"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// TypeEnvCoreProtocol is verify_env_core_protocol's type name.
const TypeEnvCoreProtocol = "verify_env_core_protocol"

// EnvCoreProtocolInfo registers verify_env_core_protocol.
func EnvCoreProtocolInfo() runner.StepInfo {
	return runner.StepInfo{Type: TypeEnvCoreProtocol, New: func() runner.Step { return new(EnvCoreProtocol) }}
}

// EnvCoreProtocol is verify_env_core_protocol: each backing server of the
// deployed env (reached through the gateway's proxy, or the server itself
// in the server topology) passes envconformance: card shape, JSON-RPC
// transport rules and side-effect-free data-plane probes. Details go to
// metadata.validated_environment_protocol.
type EnvCoreProtocol struct {
	EnvID     string `json:"env_id"`
	EnvStepID string `json:"env_step_id,omitempty"`
}

var (
	_ runner.Step         = (*EnvCoreProtocol)(nil)
	_ runner.Validator    = (*EnvCoreProtocol)(nil)
	_ runner.EntityRefser = (*EnvCoreProtocol)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *EnvCoreProtocol) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.EnvRef("env_id")}
}

// Validate implements runner.Validator.
func (c *EnvCoreProtocol) Validate() error {
	if c.EnvID == "" {
		return runner.Required("env_id")
	}
	return nil
}

// Run implements runner.Step.
func (c *EnvCoreProtocol) Run(ctx context.Context, rc *runner.RunContext) error {
	env, err := gwclient.ForEnv(rc, c.EnvID, c.EnvStepID)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 60 * time.Second}
	if tok := gwclient.ControlToken(ctx, rc, env.Entry); tok != "" && env.Gateway != nil {
		hc.Transport = bearer{token: tok}
	}
	servers := map[string]any{}
	var problems []string
	for _, name := range env.Servers {
		base := serverBase(env, name)
		ps := envconformance.CheckWith(base, hc)
		if ps == nil {
			ps = []string{}
		}
		servers[name] = map[string]any{"base_url": base, "passed": len(ps) == 0, "problems": ps}
		for _, p := range ps {
			problems = append(problems, fmt.Sprintf("server %s: %s", name, p))
		}
	}
	if len(env.Servers) == 0 {
		problems = append(problems, "the deployed env names no backing server")
	}
	record(rc, GateEnvProtocol, "validated_environment_protocol", map[string]any{"env_id": c.EnvID, "servers": servers}, problems)
	return nil
}

// serverBase is the base URL of backing server name as envconformance
// wants it (its card at base + the well-known path).
func serverBase(env *gwclient.Env, name string) string {
	if env.Gateway == nil {
		u, _ := env.Entry["environment_card_url"].(string)
		return strings.TrimSuffix(u, protocol.EnvCardPath)
	}
	return strings.TrimRight(env.Gateway.Base(), "/") + "/svc/mcp-" + name
}

// bearer adds the gateway's control token, which its /svc proxy wants.
type bearer struct{ token string }

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}
