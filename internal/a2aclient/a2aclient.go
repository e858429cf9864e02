// Package a2aclient is a client for AgentEnv A2A agents: the card, message/send with polling, tasks/get and
// tasks/cancel, and the REST extensions (mcp-config, agent-config,
// trajectory, peer-agents). The runner's deploy_agent, prompt_agent and
// peer_agents steps and the gateway's trigger executor use it; it knows
// nothing of run contexts.
//
// It is written against the wire (JSON-RPC 2.0 over HTTP), not a2a-go, so
// it can drive any agent that speaks the protocol, and so that binaries
// using it (the gateway) do not link a2a-go's gRPC and protobuf stack.
package a2aclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// Client talks to one agent at its base URL (http://127.0.0.1:8000).
type Client struct {
	base string
	http *http.Client
	a2a  string // resolved JSON-RPC URL
}

// New returns a client for the agent at base; hc nil means a client with a
// 30 s per-request timeout.
func New(base string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	b := strings.TrimRight(base, "/")
	return &Client{base: b, http: hc, a2a: b + protocol.A2APath}
}

// Base is the agent's base URL.
func (c *Client) Base() string { return c.base }

// HTTPError is a non-2xx answer of an extension endpoint.
type HTTPError struct {
	Method, URL string
	Status      int
	Body        string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.URL, e.Status, e.Body)
}

// RPCError is a JSON-RPC error answer.
type RPCError struct {
	Method  string
	Code    int
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("%s: JSON-RPC error %d: %s", e.Method, e.Code, e.Message)
}

// ErrUnreachable is matched when the agent does not answer at all.
var ErrUnreachable = errors.New("agent unreachable")

// Card reads /.well-known/agent.json and resolves the card's url (relative
// by default) against the base for later JSON-RPC calls.
func (c *Client) Card(ctx context.Context) (json.RawMessage, error) {
	st, body, err := c.do(ctx, http.MethodGet, protocol.LegacyAgentCardPath, nil)
	if err != nil {
		return nil, err
	}
	if st != http.StatusOK {
		return nil, &HTTPError{Method: http.MethodGet, URL: c.base + protocol.LegacyAgentCardPath, Status: st, Body: truncate(string(body), 300)}
	}
	var card struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(body, &card); err != nil {
		return nil, fmt.Errorf("agent card at %s is not JSON: %w", c.base, err)
	}
	if card.URL != "" {
		if u, err := url.Parse(c.base + "/"); err == nil {
			if ref, err := url.Parse(card.URL); err == nil {
				c.a2a = u.ResolveReference(ref).String()
			}
		}
	}
	return body, nil
}

// Ext calls a REST extension endpoint (path like /ext/mcp-config) with a
// JSON body (nil for none) and returns the status and body.
func (c *Client) Ext(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return 0, nil, err
		}
	}
	return c.do(ctx, method, path, b)
}

// ExtOK is Ext that turns a status ≥ 400 into an *HTTPError.
func (c *Client) ExtOK(ctx context.Context, method, path string, body any) ([]byte, error) {
	st, b, err := c.Ext(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	if st >= 400 {
		return nil, &HTTPError{Method: method, URL: c.base + path, Status: st, Body: truncate(string(b), 300)}
	}
	return b, nil
}

func (c *Client) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	u := path
	if !strings.HasPrefix(path, "http://") && !strings.HasPrefix(path, "https://") {
		u = c.base + path
	}
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		return 0, nil, fmt.Errorf("%w: %s %s: %v", ErrUnreachable, method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, b, err
}

// Part is an A2A part (text, data or file).
type Part struct {
	Kind string          `json:"kind"`
	Text string          `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
	File json.RawMessage `json:"file,omitempty"`
}

// Message is an A2A message.
type Message struct {
	Kind      string `json:"kind"`
	Role      string `json:"role"`
	MessageID string `json:"messageId"`
	ContextID string `json:"contextId,omitempty"`
	Parts     []Part `json:"parts"`
}

// Task is the A2A task shape the runner reads.
type Task struct {
	// Kind is "task", or "message" when message/send answered with a
	// direct reply instead of a task.
	Kind      string `json:"kind,omitempty"`
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State   string   `json:"state"`
		Message *Message `json:"message,omitempty"`
	} `json:"status"`
}

// Terminal reports a state the runner stops polling at.
func Terminal(state string) bool {
	switch state {
	case "completed", "failed", "canceled", "rejected":
		return true
	}
	return false
}

// Call sends one JSON-RPC request.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": NewID(), "method": method, "params": params})
	if err != nil {
		return err
	}
	st, b, err := c.do(ctx, http.MethodPost, c.a2a, body)
	if err != nil {
		return err
	}
	if st >= 500 {
		return fmt.Errorf("%w: %s: HTTP %d", ErrUnreachable, method, st)
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("%s: answer is not JSON-RPC (HTTP %d): %s", method, st, truncate(string(b), 200))
	}
	if env.Error != nil {
		return &RPCError{Method: method, Code: env.Error.Code, Message: env.Error.Message}
	}
	if result != nil {
		return json.Unmarshal(env.Result, result)
	}
	return nil
}

// Send posts message/send with blocking false (the task comes back at
// once, then poll with Get). Connection errors are retried up to 5 times.
func (c *Client) Send(ctx context.Context, contextID string, parts []Part) (*Task, error) {
	msg := Message{Kind: "message", Role: "user", MessageID: NewID(), ContextID: contextID, Parts: parts}
	params := map[string]any{"message": msg, "configuration": map[string]any{"blocking": false}}
	var t Task
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = c.Call(ctx, "message/send", params, &t); err == nil || !errors.Is(err, ErrUnreachable) {
			break
		}
		if werr := wait(ctx, time.Duration(attempt+1)*200*time.Millisecond); werr != nil {
			return nil, werr
		}
	}
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// Get is tasks/get.
func (c *Client) Get(ctx context.Context, id string) (*Task, error) {
	var t Task
	if err := c.Call(ctx, "tasks/get", map[string]any{"id": id}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Cancel is tasks/cancel (best effort).
func (c *Client) Cancel(ctx context.Context, id string) error {
	return c.Call(ctx, "tasks/cancel", map[string]any{"id": id}, nil)
}

// ErrTimeout is matched when Poll gives up at its deadline.
var ErrTimeout = errors.New("agent did not finish in time")

// Poll polls tasks/get every interval until the task is terminal or
// timeout passes (then a best-effort tasks/cancel is sent). Failed polls
// back off up to 60 s; the agent is declared unreachable after at least 3
// failed polls spanning at least 60 s.
func (c *Client) Poll(ctx context.Context, id string, interval, timeout time.Duration) (*Task, error) {
	deadline := time.Now().Add(timeout)
	delay := interval
	fails := 0
	var firstFail time.Time
	for {
		t, err := c.Get(ctx, id)
		switch {
		case err == nil:
			fails, delay = 0, interval
			if Terminal(t.Status.State) {
				return t, nil
			}
		case errors.Is(err, ErrUnreachable):
			if fails == 0 {
				firstFail = time.Now()
			}
			fails++
			if fails >= 3 && time.Since(firstFail) >= 60*time.Second {
				return nil, err
			}
			delay = min(delay*2, 60*time.Second)
		default:
			return nil, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = c.Cancel(cctx, id)
			cancel()
			return t, fmt.Errorf("%w: task %s still %s after %s", ErrTimeout, id, stateOf(t), timeout)
		}
		if err := wait(ctx, min(delay, left)); err != nil {
			return nil, err
		}
	}
}

func stateOf(t *Task) string {
	if t == nil {
		return "unknown"
	}
	return t.Status.State
}

func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// NewID is a fresh 32-hex id.
func NewID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Reply is what the runner reads from a terminal message.
type Reply struct {
	Text             string
	ToolCallCount    int
	ErrorType        string
	ErrorCode        string
	ErrorMessage     string
	StructuredOutput json.RawMessage
}

// ReadReply reads the terminal message of t: the last text part is the
// response; data parts supply tool_call_count (top level or under usage),
// error fields and structured_output. Without structured_output the last
// JSON object in the text is used.
func ReadReply(t *Task) Reply {
	var r Reply
	if t == nil || t.Status.Message == nil {
		return r
	}
	for _, p := range t.Status.Message.Parts {
		switch p.Kind {
		case "text":
			r.Text = p.Text
		case "data":
			var d map[string]json.RawMessage
			if json.Unmarshal(p.Data, &d) != nil {
				continue
			}
			if u, ok := d["usage"]; ok {
				var usage map[string]json.RawMessage
				if json.Unmarshal(u, &usage) == nil {
					_ = json.Unmarshal(usage["tool_call_count"], &r.ToolCallCount)
				}
			}
			if v, ok := d["tool_call_count"]; ok {
				_ = json.Unmarshal(v, &r.ToolCallCount)
			}
			str := func(k string, dst *string) {
				if v, ok := d[k]; ok {
					_ = json.Unmarshal(v, dst)
				}
			}
			str("error_type", &r.ErrorType)
			str("error_code", &r.ErrorCode)
			str("error_message", &r.ErrorMessage)
			if so, ok := d["structured_output"]; ok {
				r.StructuredOutput = so
			}
		}
	}
	if r.StructuredOutput == nil {
		r.StructuredOutput = lastJSONObject(r.Text)
	}
	return r
}

// lastJSONObject finds the last {...} in s that parses as a JSON object.
func lastJSONObject(s string) json.RawMessage {
	for end := strings.LastIndexByte(s, '}'); end >= 0; end = strings.LastIndexByte(s[:end], '}') {
		for start := strings.LastIndexByte(s[:end], '{'); start >= 0; start = strings.LastIndexByte(s[:start], '{') {
			cand := s[start : end+1]
			var m map[string]any
			if json.Unmarshal([]byte(cand), &m) == nil {
				return json.RawMessage(cand)
			}
			if start == 0 {
				break
			}
		}
		if end == 0 {
			break
		}
	}
	return nil
}

// Supported lists the wire names agent-config's card advertises in
// set.request.supported (nil when the agent has no agent-config).
func Supported(card json.RawMessage) []string {
	params := ExtensionParams(card, protocol.URIAgentConfig)
	var p struct {
		Methods map[string]struct {
			Request struct {
				Supported []string `json:"supported"`
			} `json:"request"`
		} `json:"methods"`
	}
	if params == nil || json.Unmarshal(params, &p) != nil {
		return nil
	}
	return p.Methods["set"].Request.Supported
}

// ExtensionParams returns the params of the card's extension uri (nil when
// not advertised).
func ExtensionParams(card json.RawMessage, uri string) json.RawMessage {
	var c struct {
		Capabilities struct {
			Extensions []struct {
				URI    string          `json:"uri"`
				Params json.RawMessage `json:"params"`
			} `json:"extensions"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(card, &c) != nil {
		return nil
	}
	for _, e := range c.Capabilities.Extensions {
		if e.URI == uri {
			if e.Params == nil {
				return json.RawMessage(`{}`)
			}
			return e.Params
		}
	}
	return nil
}

// Advertises reports whether the card lists extension uri.
func Advertises(card json.RawMessage, uri string) bool { return ExtensionParams(card, uri) != nil }
