package agentsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/protocol"
)

// Task.MCP sends the registered headers and the configured role; schemas
// come back byte for byte; isError results are values.
func TestTaskMCPSessionSendsRoleAndHeaders(t *testing.T) {
	seen := make(chan string, 4)
	s := server.NewMCPServer("env", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewToolWithRawSchema("probe", "Probe", json.RawMessage(`{"type":"object","title":"Probe input","properties":{}}`)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			seen <- req.Header.Get(protocol.HeaderRole) + "|" + req.Header.Get("X-Sandbox-Auth")
			return mcp.NewToolResultError("probe failed on purpose"), nil
		})
	hs := httptest.NewServer(server.NewStreamableHTTPServer(s, server.WithDisableLocalhostProtection(true)))
	defer hs.Close()

	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		if _, err := tk.MCP(ctx, "ghost"); !errors.Is(err, agentsdk.ErrUnknownMCPServer) {
			return nil, errors.New("unknown server accepted")
		}
		sess, err := tk.MCP(ctx, "env")
		if err != nil {
			return nil, err
		}
		tools, err := sess.ListTools(ctx)
		if err != nil {
			return nil, err
		}
		res, err := sess.CallTool(ctx, "probe", nil)
		if err != nil {
			return nil, err
		}
		return agentsdk.Text(string(tools[0].InputSchema) + "|" + res.Text + "|" + map[bool]string{true: "isError"}[res.IsError]), nil
	}))
	ctx := testCtx(t)
	if st, body := ext(t, a, "POST", protocol.AgentMCPConfigPath, map[string]any{"url": hs.URL + "/mcp", "name": "env", "headers": map[string]string{"X-Sandbox-Auth": "tok"}}); st != 200 {
		t.Fatalf("%d %s", st, body)
	}
	if st, body := ext(t, a, "POST", protocol.AgentConfigPath, map[string]any{"role": "solver"}); st != 200 {
		t.Fatalf("%d %s", st, body)
	}
	task, err := a.Client.Send(ctx, "", "go", true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","title":"Probe input","properties":{}}|probe failed on purpose|isError`
	if task.Text() != want {
		t.Fatalf("got %q (%s)", task.Text(), task.Status.State)
	}
	if got := <-seen; got != "solver|tok" {
		t.Fatalf("headers seen by the MCP server: %q", got)
	}
	if strings.Contains(task.Text(), "tok") {
		t.Fatal("header leaked")
	}
}

// Sessions are cached per context: a second task of the same context
// reuses the session; another context or a role change opens a new one.
func TestMCPSessionsCachedPerContext(t *testing.T) {
	s := server.NewMCPServer("env", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("ping"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("pong " + req.Header.Get(protocol.HeaderRole)), nil
	})
	inits := make(chan struct{}, 16)
	h := server.NewStreamableHTTPServer(s, server.WithDisableLocalhostProtection(true))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get(protocol.HeaderMCPSessionID) == "" {
			inits <- struct{}{}
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		sess, err := tk.MCP(ctx, "env")
		if err != nil {
			return nil, err
		}
		res, err := sess.CallTool(ctx, "ping", nil)
		if err != nil {
			return nil, err
		}
		return agentsdk.Text(res.Text), nil
	}))
	ext(t, a, "POST", protocol.AgentMCPConfigPath, map[string]any{"url": hs.URL + "/mcp", "name": "env"})
	ctx := testCtx(t)
	send := func(contextID string) string {
		task, err := a.Client.Send(ctx, contextID, "x", true)
		if err != nil || task.Status.State != "completed" {
			t.Fatalf("%+v %v", task, err)
		}
		return task.Text()
	}
	send("c1")
	send("c1")
	if n := len(inits); n != 1 {
		t.Fatalf("initializes after two tasks of one context: %d", n)
	}
	send("c2")
	if n := len(inits); n != 2 {
		t.Fatalf("initializes after a second context: %d", n)
	}
	ext(t, a, "POST", protocol.AgentConfigPath, map[string]any{"role": "judge"})
	if got := send("c1"); got != "pong judge" || len(inits) != 3 {
		t.Fatalf("after role change: %q, %d initializes", got, len(inits))
	}
}
