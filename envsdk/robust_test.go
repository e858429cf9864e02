package envsdk_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

func TestToolFailureShapes(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "x"}, &envsdk.Options{Getenv: noEnv, MaxBodyBytes: 4096})
	envsdk.AddTool(s, &envsdk.Tool{Name: "rpc_error"}, func(context.Context, *envsdk.Request, struct{}) (string, error) {
		return "", protocol.NewInvalidParams("bad thing")
	})
	envsdk.AddTool(s, &envsdk.Tool{Name: "panics"}, func(context.Context, *envsdk.Request, struct{}) (string, error) {
		panic("kaboom")
	})
	envsdk.AddTool(s, &envsdk.Tool{Name: "raw"}, func(context.Context, *envsdk.Request, struct{}) (*envsdk.ToolResult, error) {
		return &envsdk.ToolResult{Text: "custom", IsError: true}, nil
	})
	env := envsdktest.Start(t, s)
	ctx := context.Background()

	// A *protocol.Error is a JSON-RPC error, by design (style guide).
	if _, err := envsdktest.CallTool(ctx, env.Client, "rpc_error", map[string]any{}, nil); err == nil || !strings.Contains(err.Error(), "bad thing") {
		t.Fatalf("rpc_error: %v", err)
	}
	// A panic is an isError result and the server keeps serving.
	if res := env.Call(t, "panics", map[string]any{}); !res.IsError || res.Text != "tool panics panicked: kaboom" {
		t.Fatalf("panics = %+v", res)
	}
	if res := env.Call(t, "raw", map[string]any{}); !res.IsError || res.Text != "custom" {
		t.Fatalf("raw = %+v", res)
	}
	// Arguments that are not an object: isError, not a crash.
	req := mcp.CallToolRequest{}
	req.Params.Name = "raw"
	req.Params.Arguments = []int{1}
	if res, err := env.Client.CallTool(ctx, req); err != nil || !res.IsError {
		t.Fatalf("list arguments: %v %+v", err, res)
	}

	// An oversized MCP body is refused with 413 before it reaches the library.
	big := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"raw","arguments":{"x":"` + strings.Repeat("a", 5000) + `"}}}`
	hreq, _ := http.NewRequest(http.MethodPost, env.MCPURL, bytes.NewReader([]byte(big)))
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json, text/event-stream")
	hreq.Header.Set("Mcp-Session-Id", env.Client.GetSessionId())
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized MCP body: %d", resp.StatusCode)
	}
	if res := env.Call(t, "raw", map[string]any{}); res.Text != "custom" {
		t.Fatal("server unusable after oversized body")
	}
}

func TestClockIdempotentAndDisableMCP(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "x"}, &envsdk.Options{Getenv: noEnv})
	s.EnableClock()
	s.EnableClock()
	card, err := s.Card()
	if err != nil || len(card.Capabilities.Extensions) != 1 {
		t.Fatalf("%+v %v", card, err)
	}
	s = envsdk.New(&protocol.EnvCard{Name: "x"}, &envsdk.Options{Getenv: noEnv, DisableMCP: true})
	envsdk.AddTool(s, &envsdk.Tool{Name: "t"}, func(context.Context, *envsdk.Request, struct{}) (string, error) { return "", nil })
	if _, err := s.Handler(); err == nil || !strings.Contains(err.Error(), "DisableMCP") {
		t.Fatalf("tools without MCP: %v", err)
	}
}
