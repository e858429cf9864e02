package agentsdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentenv/agentenv/protocol"
)

// ErrUnknownMCPServer is returned by Task.MCP for a name mcp-config does
// not know.
var ErrUnknownMCPServer = errors.New("agentsdk: unknown MCP server")

// MCPSession is an open MCP client session to one registered server. It
// sends the server's registered headers and, when the agent-config role
// is set, AgentEnv-Role on every request.
type MCPSession struct {
	Name string
	c    *client.Client
	key  string
	// broken is set on a transport failure: the next Task.MCP reopens.
	broken atomic.Bool
	mu     sync.Mutex
	seq    int
}

// Tool is one MCP tool descriptor, with its schema kept byte for byte.
type Tool struct {
	// Server is the mcp-config name of the server offering the tool.
	Server      string          `json:"-"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// ToolResult is the result of a tools/call. An isError result is a value,
// not an error: the model should see it.
type ToolResult struct {
	// Text joins the text content items with newlines.
	Text    string
	IsError bool
	// Raw is the whole result object.
	Raw json.RawMessage
}

// MCP opens a session to the named server, or reuses the one this
// context opened before (sessions are cached per context, reopened when
// the server's url, headers or the role changed or the session broke, and
// closed when the context is evicted or the server closes).
func (t *Task) MCP(ctx context.Context, name string) (*MCPSession, error) {
	srv, ok := t.MCPServers[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownMCPServer, name)
	}
	return t.sessions.get(ctx, name, srv, t.Role)
}

// mcpSessions caches the sessions of one context. Tasks of a context run
// one at a time, so a session is never shared by two running tasks.
type mcpSessions struct {
	mu     sync.Mutex
	m      map[string]*MCPSession
	closed bool
}

func sessionKey(srv MCPServer, role string) string {
	b, _ := json.Marshal([]any{srv.URL, srv.Headers, role})
	return string(b)
}

func (s *mcpSessions) get(ctx context.Context, name string, srv MCPServer, role string) (*MCPSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("agentsdk: MCP sessions of this context are closed")
	}
	key := sessionKey(srv, role)
	if sess, ok := s.m[name]; ok {
		if sess.key == key && !sess.broken.Load() {
			return sess, nil
		}
		_ = sess.c.Close()
		delete(s.m, name)
	}
	headers := maps.Clone(srv.Headers)
	if headers == nil {
		headers = map[string]string{}
	}
	if role != "" {
		headers[protocol.HeaderRole] = role
	}
	tr, err := transport.NewStreamableHTTP(srv.URL, transport.WithHTTPHeaders(headers),
		transport.WithHTTPLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		return nil, fmt.Errorf("mcp %s: %w", name, err)
	}
	c := client.NewClient(tr)
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("mcp %s: start: %w", name, err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "agentenv-agentsdk", Version: "0.1.0"},
	}}); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("mcp %s: initialize: %w", name, err)
	}
	if s.m == nil {
		s.m = map[string]*MCPSession{}
	}
	sess := &MCPSession{Name: name, c: c, key: key}
	s.m[name] = sess
	return sess, nil
}

func (s *mcpSessions) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range s.m {
		_ = sess.c.Close()
	}
	s.m = nil
	s.closed = true
}

func (m *MCPSession) send(ctx context.Context, method string, params any) (json.RawMessage, error) {
	m.mu.Lock()
	m.seq++
	id := fmt.Sprintf("agentsdk-%d", m.seq)
	m.mu.Unlock()
	resp, err := m.c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: method, Params: params})
	if err != nil {
		m.broken.Store(true)
		return nil, fmt.Errorf("mcp %s: %s: %w", m.Name, method, err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("mcp %s: %s: %s (%d)", m.Name, method, resp.Error.Message, resp.Error.Code)
	}
	return resp.Result, nil
}

// ListTools lists every tool (following pagination), keeping schemas
// exactly as the server sent them.
func (m *MCPSession) ListTools(ctx context.Context) ([]Tool, error) {
	var out []Tool
	cursor := ""
	for range 1000 {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := m.send(ctx, string(mcp.MethodToolsList), params)
		if err != nil {
			return nil, err
		}
		var page struct {
			Tools      []Tool `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("mcp %s: tools/list: %w", m.Name, err)
		}
		for _, t := range page.Tools {
			t.Server = m.Name
			out = append(out, t)
		}
		if page.NextCursor == "" {
			return out, nil
		}
		cursor = page.NextCursor
	}
	return nil, fmt.Errorf("mcp %s: tools/list: too many pages", m.Name)
}

// CallTool calls a tool with arguments given as JSON (nil means {}).
func (m *MCPSession) CallTool(ctx context.Context, name string, arguments json.RawMessage) (*ToolResult, error) {
	if len(strings.TrimSpace(string(arguments))) == 0 {
		arguments = json.RawMessage("{}")
	}
	raw, err := m.send(ctx, string(mcp.MethodToolsCall), map[string]any{"name": name, "arguments": arguments})
	if err != nil {
		return nil, err
	}
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("mcp %s: tools/call: %w", m.Name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	return &ToolResult{Text: strings.Join(texts, "\n"), IsError: res.IsError, Raw: raw}, nil
}
