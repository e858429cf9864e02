package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestChildAnswersOverSSE: a child that sends notifications while a call
// runs answers on an event stream; the gateway reads the response from it.
func TestChildAnswersOverSSE(t *testing.T) {
	c := startChild(t, "chatty", &childOpts{tools: []server.ServerTool{{
		Tool: mcp.NewToolWithRawSchema("chatty_talk", "Talks while working.", json.RawMessage(`{"type":"object"}`)),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			srv := server.ServerFromContext(ctx)
			for i := 0; i < 3; i++ {
				_ = srv.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "working"})
			}
			return mcp.NewToolResultText("done\nwith a newline"), nil
		}}}})
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	out := tg.mcpClient(t, "").call(t, "chatty_talk", map[string]any{})
	if out.IsError || out.text() != "done\nwith a newline" {
		t.Fatalf("call over SSE = %+v", out)
	}
	// Check directly that the child really answered with an event stream.
	g, err := tg.children[0].session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", c.URL, strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"chatty_talk","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", g.session)
	req.Header.Set("MCP-Protocol-Version", g.protocol)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("child answered %s, not an event stream; the test does not exercise SSE: %s", resp.Header.Get("Content-Type"), b)
	}
	// The trajectory line stays one line although the result has a newline.
	_, traj, _ := tg.do(t, "GET", "/trajectory", nil, "")
	readEvents(t, traj)
}
