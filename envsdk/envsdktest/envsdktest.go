// Package envsdktest starts an envsdk server on a loopback port for tests
// and hands back its URLs and a connected MCP client, so that a tool
// author tests a tool in a few lines and other components (the gateway)
// can put real env servers behind them:
//
//	env := envsdktest.Start(t, s)
//	res := env.Call(t, "items_add_item", map[string]any{"item": "a"})
//	if res.IsError { t.Fatal(res.Text) }
//
// Everything started is stopped by t.Cleanup.
package envsdktest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/protocol"
)

// Env is a running env server.
type Env struct {
	// BaseURL is http://127.0.0.1:<port>, without a trailing slash.
	BaseURL string
	// MCPURL, CardURL and DataURL are the MCP endpoint, the card and the
	// data plane.
	MCPURL, CardURL, DataURL string
	// Addr is the host:port listened on.
	Addr   string
	Server *envsdk.Server
	// Client is an initialized mcp-go client without a role header.
	Client *client.Client
}

// Start serves s on 127.0.0.1:0 until the test ends. Construction errors
// fail the test.
func Start(t testing.TB, s *envsdk.Server) *Env {
	t.Helper()
	card, err := s.Card()
	if err != nil {
		t.Fatalf("envsdktest: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("envsdktest: listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("envsdktest: serve: %v", err)
		}
	})
	base := "http://" + ln.Addr().String()
	e := &Env{
		BaseURL: base,
		Addr:    ln.Addr().String(),
		MCPURL:  base + card.MCPPath(),
		CardURL: base + protocol.EnvCardPath,
		DataURL: base + card.DataPlaneURL(),
		Server:  s,
	}
	if hasMCP(card) {
		e.Client = e.NewClient(t, nil)
	}
	return e
}

func hasMCP(c *protocol.EnvCard) bool {
	for _, i := range c.AdditionalInterfaces {
		if i.Transport == protocol.TransportMCP {
			return true
		}
	}
	return false
}

// NewClient connects another initialized mcp-go client sending the given
// headers on every request (for example AgentEnv-Role). It is closed when
// the test ends.
func (e *Env) NewClient(t testing.TB, headers map[string]string) *client.Client {
	t.Helper()
	// A client of its own, so its pooled connections close with it: a
	// connection the pool dialed but never used stays "new" on the server,
	// and http.Server.Shutdown waits 5 s before it treats such a connection
	// as idle, which made every Start'ed server slow to stop.
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	tr, err := transport.NewStreamableHTTP(e.MCPURL,
		transport.WithHTTPBasicClient(hc),
		transport.WithHTTPHeaders(headers),
		transport.WithHTTPLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatalf("envsdktest: transport: %v", err)
	}
	c := client.NewClient(tr)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("envsdktest: start client: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		hc.CloseIdleConnections()
	})
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo:      mcp.Implementation{Name: "envsdktest", Version: "0"},
	}}); err != nil {
		t.Fatalf("envsdktest: initialize: %v", err)
	}
	return c
}

// Result is a tool call result reduced to what tests check.
type Result struct {
	// Text is the concatenated text content.
	Text    string
	IsError bool
	// Structured is the structuredContent as JSON, nil when absent.
	Structured json.RawMessage
}

// Call calls a tool with the default client and fails the test on a
// transport or JSON-RPC error (isError results are returned, not failed).
func (e *Env) Call(t testing.TB, name string, args any) Result {
	t.Helper()
	r, err := CallTool(context.Background(), e.Client, name, args, nil)
	if err != nil {
		t.Fatalf("envsdktest: call %s: %v", name, err)
	}
	return r
}

// CallTool calls a tool through c with optional _meta keys.
func CallTool(ctx context.Context, c *client.Client, name string, args any, meta map[string]any) (Result, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	if meta != nil {
		req.Params.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return Result{}, err
	}
	out := Result{IsError: res.IsError}
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			out.Text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		out.Structured, _ = json.Marshal(res.StructuredContent)
	}
	return out, nil
}
