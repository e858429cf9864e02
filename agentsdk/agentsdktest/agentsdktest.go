// Package agentsdktest starts an agentsdk agent on a loopback port and
// talks to it the way the runner does (JSON-RPC message/send, tasks/get
// polling, the /ext/* REST calls), so an agent author can test an agent
// end to end in a few lines:
//
//	a := agentsdktest.Start(t, &agentsdk.Card{Name: "echo"}, &agentsdk.Options{Agent: h})
//	task, err := a.Client.Prompt(ctx, "ctx-1", "hello") // send non-blocking, poll to the end
//	// task.Status.State == "completed"; task.Text() is the answer
package agentsdktest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/protocol"
)

// Agent is a running agent.
type Agent struct {
	// URL is the base URL (http://127.0.0.1:port).
	URL    string
	Server *agentsdk.Server
	Client *Client
}

// Start serves the agent on a loopback port until the test ends.
func Start(t testing.TB, card *agentsdk.Card, opts *agentsdk.Options) *Agent {
	t.Helper()
	s, err := agentsdk.New(card, opts)
	if err != nil {
		t.Fatalf("agentsdk.New: %v", err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	return &Agent{URL: hs.URL, Server: s, Client: &Client{BaseURL: hs.URL, HTTP: hs.Client()}}
}

// Client is a minimal A2A JSON-RPC and extension client.
type Client struct {
	BaseURL string
	// RPCPath defaults to /a2a.
	RPCPath string
	HTTP    *http.Client
	// Header is sent on every request.
	Header http.Header
	// PollInterval of Wait; 0 means 2 ms.
	PollInterval time.Duration
}

// RPCError is a JSON-RPC error answer.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// Task is the A2A task shape the runner reads.
type Task struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State   string   `json:"state"`
		Message *Message `json:"message,omitempty"`
	} `json:"status"`
	History []Message `json:"history,omitempty"`
}

// Message is an A2A message.
type Message struct {
	Role      string          `json:"role"`
	MessageID string          `json:"messageId"`
	Parts     []protocol.Part `json:"parts"`
}

// Text is the last text part of the terminal message (what the runner
// takes as the response).
func (t *Task) Text() string {
	if t.Status.Message == nil {
		return ""
	}
	for i := len(t.Status.Message.Parts) - 1; i >= 0; i-- {
		if p := t.Status.Message.Parts[i]; p.Kind == protocol.PartKindText {
			return p.Text
		}
	}
	return ""
}

// Trailer decodes the last data part of the terminal message.
func (t *Task) Trailer() protocol.TrailerData {
	var td protocol.TrailerData
	if t.Status.Message != nil {
		parts := t.Status.Message.Parts
		if n := len(parts); n > 0 && parts[n-1].Kind == protocol.PartKindData {
			_ = json.Unmarshal(parts[n-1].Data, &td)
		}
	}
	return td
}

// Terminal reports whether the runner stops polling at this state.
func (t *Task) Terminal() bool {
	switch t.Status.State {
	case "completed", "failed", "canceled", "rejected":
		return true
	}
	return false
}

// Call sends one JSON-RPC request; a JSON-RPC error is returned as *RPCError.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	path := c.RPCPath
	if path == "" {
		path = protocol.A2APath
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": newID(), "method": method, "params": params})
	if err != nil {
		return err
	}
	status, raw, err := c.do(ctx, http.MethodPost, path, body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", method, status, raw)
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if resp.Error != nil {
		return resp.Error
	}
	if result != nil {
		return json.Unmarshal(resp.Result, result)
	}
	return nil
}

// SendParams builds message/send params with one text part.
func SendParams(contextID, text string, blocking bool) map[string]any {
	msg := map[string]any{"kind": "message", "messageId": newID(), "role": "user",
		"parts": []any{map[string]any{"kind": "text", "text": text}}}
	if contextID != "" {
		msg["contextId"] = contextID
	}
	return map[string]any{"message": msg, "configuration": map[string]any{"blocking": blocking}}
}

// Send sends a text prompt with message/send.
func (c *Client) Send(ctx context.Context, contextID, text string, blocking bool) (*Task, error) {
	var t Task
	if err := c.Call(ctx, "message/send", SendParams(contextID, text, blocking), &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Get calls tasks/get.
func (c *Client) Get(ctx context.Context, id string) (*Task, error) {
	var t Task
	if err := c.Call(ctx, "tasks/get", map[string]any{"id": id}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Cancel calls tasks/cancel.
func (c *Client) Cancel(ctx context.Context, id string) (*Task, error) {
	var t Task
	if err := c.Call(ctx, "tasks/cancel", map[string]any{"id": id}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Wait polls tasks/get until the task is terminal or ctx ends.
func (c *Client) Wait(ctx context.Context, id string) (*Task, error) {
	return c.WaitFor(ctx, id, (*Task).Terminal)
}

// WaitFor polls tasks/get until cond holds or ctx ends.
func (c *Client) WaitFor(ctx context.Context, id string, cond func(*Task) bool) (*Task, error) {
	iv := c.PollInterval
	if iv == 0 {
		iv = 2 * time.Millisecond
	}
	tick := time.NewTicker(iv)
	defer tick.Stop()
	for {
		t, err := c.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if cond(t) {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-tick.C:
		}
	}
}

// Prompt sends text non-blocking (as the runner does) and waits for the end.
func (c *Client) Prompt(ctx context.Context, contextID, text string) (*Task, error) {
	t, err := c.Send(ctx, contextID, text, false)
	if err != nil {
		return nil, err
	}
	return c.Wait(ctx, t.ID)
}

// Ext calls an extension route: GET when body is nil and method is GET,
// else a JSON body. It returns the status and raw response body.
func (c *Client) Ext(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var b []byte
	switch v := body.(type) {
	case nil:
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return 0, nil, err
		}
	}
	return c.do(ctx, method, path, b)
}

func (c *Client) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
