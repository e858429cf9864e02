package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestCancellationRelay: an agent's notifications/cancelled stops its
// running call; the child's handler sees its context end and the child is
// sent notifications/cancelled for its own request id.
func TestCancellationRelay(t *testing.T) {
	entered := make(chan struct{}, 1)
	handlerDone := make(chan struct{}, 1)
	c := startChild(t, "slow", &childOpts{tools: []server.ServerTool{{
		Tool: mcp.NewToolWithRawSchema("slow_wait", "Waits.", json.RawMessage(`{"type":"object"}`)),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			entered <- struct{}{}
			select {
			case <-ctx.Done():
				handlerDone <- struct{}{}
			case <-time.After(20 * time.Second):
			}
			return mcp.NewToolResultText("finished"), nil
		}}}})
	relayed := make(chan string, 4)
	c.inter.Store(func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
			relayed <- string(body)
		}
		return false
	})
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	a := tg.mcpClient(t, "")
	answered := make(chan *transport.JSONRPCResponse, 1)
	go func() {
		resp, _ := a.c.GetTransport().SendRequest(context.Background(), transport.JSONRPCRequest{
			JSONRPC: "2.0", ID: mcp.NewRequestId("call-7"), Method: "tools/call",
			Params: map[string]any{"name": "slow_wait", "arguments": map[string]any{}}})
		answered <- resp
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("call never reached the child")
	}
	err := a.c.GetTransport().SendNotification(context.Background(), mcp.JSONRPCNotification{JSONRPC: "2.0",
		Notification: mcp.Notification{Method: "notifications/cancelled",
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": "call-7", "reason": "user"}}}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-handlerDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the child's handler was not cancelled")
	}
	select {
	case body := <-relayed:
		if !strings.Contains(body, `"requestId":`) {
			t.Fatalf("relayed %s", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("notifications/cancelled not relayed to the child")
	}
	select {
	case resp := <-answered:
		if resp != nil && !strings.Contains(string(resp.Result), `"isError":true`) {
			t.Fatalf("cancelled call answered %s", resp.Result)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call never returned")
	}
}
