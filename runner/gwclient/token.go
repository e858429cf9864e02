package gwclient

import (
	"context"
	"net/http"
	"sync"

	"github.com/agentenv/agentenv/runner"
)

// KeyControlToken is the deployed_envs[] key holding the gateway's control
// token. It is a safe-form key (registry/redact): persisted and printed
// contexts lack it, so a resumed run finds the token again in the env
// instance record.
const KeyControlToken = "gateway_control_token"

// ControlToken returns the control token of a deployed env entry: the
// entry's own, else its env instance record's; "" for an env deployed
// without one (its gateway's control routes are open) or whose record is
// gone (the gateway then answers 401, which names the problem).
func ControlToken(ctx context.Context, rc *runner.RunContext, entry map[string]any) string {
	if tok, _ := entry[KeyControlToken].(string); tok != "" {
		return tok
	}
	id, _ := entry["instance_id"].(string)
	s := rc.Services()
	if id == "" || s == nil || s.Deployer == nil {
		return ""
	}
	inst, err := s.Deployer.GetInstance(ctx, id)
	if err != nil {
		return ""
	}
	return inst.ControlToken
}

// tokenSource resolves a control token once, on first use.
type tokenSource struct {
	once sync.Once
	get  func(context.Context) string
	tok  string
}

func (t *tokenSource) value(ctx context.Context) string {
	t.once.Do(func() { t.tok = t.get(ctx) })
	return t.tok
}

// authorize adds the control token, if any, to req.
func (c *Client) authorize(req *http.Request) {
	if c.token == nil {
		return
	}
	if tok := c.token.value(req.Context()); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
}

// authTransport authorizes the data-plane requests of Server.
type authTransport struct{ c *Client }

func (a authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	a.c.authorize(req)
	return http.DefaultTransport.RoundTrip(req)
}

// ForDeployed is the client of a deployed env as rc.Envs lists it, with its
// control token; hc nil means a 60 s per-request timeout.
func ForDeployed(rc *runner.RunContext, e runner.DeployedEnv, hc *http.Client) *Client {
	c := New(e.GatewayURL, hc)
	entry, err := rc.EnvEntry(e.EnvID, e.DeployStepID())
	if err != nil {
		entry = map[string]any{"instance_id": e.InstanceID}
	}
	c.token = &tokenSource{get: func(ctx context.Context) string { return ControlToken(ctx, rc, entry) }}
	return c
}

// NewWithControlToken is New for a gateway whose control token the caller
// already holds (the explorer reads it from the env instance record); ""
// sends none.
func NewWithControlToken(base, controlToken string, hc *http.Client) *Client {
	c := New(base, hc)
	if controlToken != "" {
		c.token = &tokenSource{get: func(context.Context) string { return controlToken }}
	}
	return c
}
