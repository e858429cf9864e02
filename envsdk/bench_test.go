package envsdk_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/envsdk/envsdktest"
)

// BenchmarkToolCallRoundTrip measures one MCP tools/call (mcp-go client,
// streamable HTTP, loopback) to a typed envsdk tool.
func BenchmarkToolCallRoundTrip(b *testing.B) {
	s, _ := itemsServer(b, nil)
	env := envsdktest.Start(b, s)
	ctx := context.Background()
	args := map[string]any{"item": "a", "times": 0}
	b.ReportAllocs()
	for b.Loop() {
		res, err := envsdktest.CallTool(ctx, env.Client, "items_add_item", args, nil)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkDataPlaneRoundTrip measures one data/get on the same server, as
// a baseline for the HTTP and JSON-RPC cost without MCP.
func BenchmarkDataPlaneRoundTrip(b *testing.B) {
	s, _ := itemsServer(b, nil)
	env := envsdktest.Start(b, s)
	body := `{"jsonrpc":"2.0","id":1,"method":"data/get"}`
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Post(env.DataURL, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
