package triggers

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentenv/agentenv/gateway/vclock"
	"github.com/agentenv/agentenv/protocol"
)

// mcpHost is a Host whose tools live on a real MCP server (mcp-go
// streamable HTTP on loopback), called through a real MCP client, the way
// the gateway calls its children. Role rules, changelog and trajectory are
// recorded as in testHost.
type mcpHost struct {
	*testHost
	c     *client.Client
	tools map[string]ToolInfo
}

func (h *mcpHost) CallTool(ctx context.Context, as, tool string, args json.RawMessage) (json.RawMessage, bool, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	if as != "" {
		req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{protocol.MetaRole: as}}
	}
	res, err := h.c.CallTool(ctx, req)
	if err != nil {
		return nil, false, err
	}
	b, err := json.Marshal(res)
	return b, res.IsError, err
}

func (h *mcpHost) LookupTool(name string) (ToolInfo, bool) {
	info, ok := h.tools[name]
	return info, ok
}

func newMCPHost(t *testing.T) (*mcpHost, *sync.Map) {
	seen := &sync.Map{} // tool -> role stamped in _meta
	s := server.NewMCPServer("env", "0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("create_ticket", mcp.WithString("title")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(`{"id":"T-7"}`), nil
	})
	s.AddTool(mcp.NewTool("notify", mcp.WithString("ticket")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		role := ""
		if req.Params.Meta != nil {
			role, _ = req.Params.Meta.AdditionalFields[protocol.MetaRole].(string)
		}
		seen.Store("notify", role)
		var args map[string]any
		_ = json.Unmarshal(req.Params.RawArguments, &args)
		seen.Store("notify.ticket", args["ticket"])
		return mcp.NewToolResultText("sent"), nil
	})
	s.AddTool(mcp.NewTool("fail"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("refused by policy"), nil
	})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s,
		server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326),
		server.WithDisableLocalhostProtection(true)))
	t.Cleanup(srv.Close)
	tr, err := transport.NewStreamableHTTP(srv.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "test", Version: "0"}}}); err != nil {
		t.Fatal(err)
	}
	return &mcpHost{testHost: newTestHost(), c: c, tools: map[string]ToolInfo{"create_ticket": {}, "notify": {}, "fail": {}}}, seen
}

func TestEngineOverRealMCPServer(t *testing.T) {
	h, seen := newMCPHost(t)
	e := New(h, vclock.New(nil), nil)
	defer e.Close()
	mustRegister(t, e, `{"triggers":[
	  {"id":"mirror","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"provoking_call"},
	   "actions":[{"type":"tool","tool":"notify","args":{"ticket":"${result.id}"},"as":"system"}]},
	  {"id":"refused","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"provoking_call"},
	   "actions":[{"type":"tool","tool":"fail"}]}]}`)
	ctx := context.Background()
	res, isErr, err := h.CallTool(ctx, "", "create_ticket", json.RawMessage(`{"title":"x"}`))
	if err != nil || isErr {
		t.Fatal(err, isErr)
	}
	e.AfterToolCall(ctx, ToolCall{Role: "default", Tool: "create_ticket", Args: json.RawMessage(`{"title":"x"}`), Result: res}).Wait(ctx)
	if role, _ := seen.Load("notify"); role != "system" {
		t.Fatalf("notify stamped with %v, want system", role)
	}
	if id, _ := seen.Load("notify.ticket"); id != "T-7" {
		t.Fatalf("notify ticket %v", id)
	}
	if s := statusOf(e, "mirror"); s.Status != "fired" {
		t.Fatalf("%+v", s)
	}
	af := eventsOf(e, "action_failed")
	if len(af) != 1 || af[0]["trigger_id"] != "refused" || af[0]["detail"] != "refused by policy" {
		t.Fatalf("action_failed %v", af)
	}
}
