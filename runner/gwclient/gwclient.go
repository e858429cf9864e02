// Package gwclient is the runner's client for a deployed env's gateway:
// tool calls through /step, role rules, the virtual
// clock, triggers, and each backing server's data plane behind
// /svc/mcp-<name>. The env steps (load_artifact into envs,
// modify_env_tool_access, sync_env_clock, register_env_triggers,
// env_outcome_verifier, snapshot_env, reset_env, prompt_agent) share it.
// A client for a deployed env (ForEnv, ForDeployed) sends the env's
// gateway control token on every request: the runner deploys every gateway
// with one, and agents never see it.
package gwclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentenv/agentenv/envsdk/envclient"
)

// RoleHeader carries the caller's role to the gateway.
const RoleHeader = "AgentEnv-Role"

// VerifierRole is the role the runner's own probes use: not a watched
// role, so probes fire no triggers.
const VerifierRole = "agentenv-runner"

// Client talks to one gateway.
type Client struct {
	base string
	http *http.Client
	// token, when set, resolves the gateway's control token, sent as
	// "Authorization: Bearer" on every request (data plane included).
	token *tokenSource
}

// New returns a client for the gateway at base; hc nil means a 60 s
// per-request timeout.
func New(base string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &Client{base: strings.TrimRight(base, "/"), http: hc}
}

// Base is the gateway URL.
func (c *Client) Base() string { return c.base }

// StatusError is an answer with an unexpected status.
type StatusError struct {
	Method, URL string
	Status      int
	Body        string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.URL, e.Status, e.Body)
}

// Do sends a JSON request as role ("" = none) and decodes a 2xx answer
// into out (nil to ignore); other statuses are a *StatusError.
func (c *Client) Do(ctx context.Context, method, path, role string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return err
	}
	c.authorize(req)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if role != "" {
		req.Header.Set(RoleHeader, role)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		s := string(b)
		if len(s) > 300 {
			s = s[:300] + "…"
		}
		return &StatusError{Method: method, URL: c.base + path, Status: resp.StatusCode, Body: s}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: answer is not JSON: %w", method, c.base+path, err)
		}
	}
	return nil
}

// ToolResult is a CallToolResult as /step returns it.
type ToolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
}

// Text joins the text contents with "\n".
func (r *ToolResult) Text() string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// CallTool calls a tool through POST /step as role.
func (c *Client) CallTool(ctx context.Context, role, tool string, args map[string]any) (*ToolResult, error) {
	if args == nil {
		args = map[string]any{}
	}
	var out ToolResult
	err := c.Do(ctx, http.MethodPost, "/step", role, map[string]any{"action": "call_tool", "tool_name": tool, "arguments": args}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Server is the data-plane client of backing server name, reached through
// the gateway's proxy.
func (c *Client) Server(name string) *envclient.Client {
	return c.envClient(c.base + "/svc/mcp-" + name)
}

// Card is an env-protocol client of the gateway itself (its card and the
// extension endpoints the card advertises, such as the clock's).
func (c *Client) Card() *envclient.Client { return c.envClient(c.base) }

// envClient is an envclient for base that sends the control token.
func (c *Client) envClient(base string) *envclient.Client {
	hc := &http.Client{}
	if c.token != nil {
		hc.Transport = authTransport{c}
	}
	return envclient.New(base, &envclient.Options{HTTPClient: hc})
}

// TriggerState is the part of GET /triggers/state the runner reads.
type TriggerState struct {
	Triggers []struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		Status    string          `json:"status"`
		FireCount int             `json:"fire_count"`
		Pending   int             `json:"pending"`
		When      json.RawMessage `json:"when"`
	} `json:"triggers"`
	Raw json.RawMessage `json:"-"`
}

// Settling reports whether a trigger is still firing or queued, or has
// pending calls.
func (s *TriggerState) Settling() bool {
	for _, t := range s.Triggers {
		if t.Status == "firing" || t.Status == "queued" || t.Pending > 0 {
			return true
		}
	}
	return false
}

// TriggersState reads GET /triggers/state.
func (c *Client) TriggersState(ctx context.Context) (*TriggerState, error) {
	var raw json.RawMessage
	if err := c.Do(ctx, http.MethodGet, "/triggers/state", "", nil, &raw); err != nil {
		return nil, err
	}
	var st TriggerState
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	st.Raw = raw
	return &st, nil
}

// ClockState reads GET /clock/state.
func (c *Client) ClockState(ctx context.Context) (map[string]any, error) {
	var out map[string]any
	return out, c.Do(ctx, http.MethodGet, "/clock/state", "", nil, &out)
}
