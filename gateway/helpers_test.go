package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentenv/agentenv/protocol"
)

// quiet is a logger that drops everything (tests assert on behaviour).
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testChild is a real MCP env server on a loopback port: mcp-go's server
// plus a card and a data plane, standing in for an env behind the gateway.
type testChild struct {
	name   string
	srv    *server.MCPServer
	hs     *httptest.Server
	URL    string // MCP endpoint
	Base   string
	calls  atomic.Int64
	mu     sync.Mutex
	metas  []map[string]any
	card   atomic.Value // []byte, nil = 404
	inter  atomic.Value // func(w, r, body) bool: intercept a POST /mcp
	lastDP atomic.Value // []byte: last data-plane body
}

type childOpts struct {
	// tools are registered on the child; echo when empty.
	tools []server.ServerTool
	// pageSize enables pagination of tools/list.
	pageSize int
	// card is served at the card path (nil = 404).
	card []byte
	// addr listens on a fixed address (for restarts).
	addr string
}

// echoTool answers its raw arguments as text and records the _meta.
func (c *testChild) echoTool(name string) server.ServerTool {
	return server.ServerTool{
		Tool: mcp.NewToolWithRawSchema(name, "Echo the arguments.", json.RawMessage(`{"type":"object","properties":{"msg":{"type":"string"}}}`)),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c.record(req)
			return mcp.NewToolResultText(string(req.Params.RawArguments)), nil
		},
	}
}

func (c *testChild) record(req mcp.CallToolRequest) {
	c.calls.Add(1)
	m := map[string]any{}
	if req.Params.Meta != nil {
		for k, v := range req.Params.Meta.AdditionalFields {
			m[k] = v
		}
	}
	c.mu.Lock()
	c.metas = append(c.metas, m)
	c.mu.Unlock()
}

func (c *testChild) lastMeta(t *testing.T) map[string]any {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.metas) == 0 {
		t.Fatalf("child %s received no call", c.name)
	}
	return c.metas[len(c.metas)-1]
}

func startChild(t testing.TB, name string, o *childOpts) *testChild {
	t.Helper()
	if o == nil {
		o = &childOpts{}
	}
	c := &testChild{name: name}
	sopts := []server.ServerOption{server.WithToolCapabilities(true)}
	if o.pageSize > 0 {
		sopts = append(sopts, server.WithPaginationLimit(o.pageSize))
	}
	c.srv = server.NewMCPServer(name, "1", sopts...)
	if len(o.tools) == 0 {
		c.srv.AddTools(c.echoTool(name + "_echo"))
	} else {
		c.srv.AddTools(o.tools...)
	}
	if o.card != nil {
		c.card.Store(o.card)
	}
	mh := server.NewStreamableHTTPServer(c.srv,
		server.WithStreamableHTTPProtocolVersions(supportedMCPVersions...),
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(quiet),
		server.WithStateful(true))
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if f, _ := c.inter.Load().(func(http.ResponseWriter, *http.Request, []byte) bool); f != nil && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if f(w, r, body) {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		mh.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"status":"ok"}`)) })
	mux.HandleFunc("GET "+protocol.EnvCardPath, func(w http.ResponseWriter, r *http.Request) {
		b, _ := c.card.Load().([]byte)
		if b == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
	mux.HandleFunc("POST /agentenv", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.lastDP.Store(b)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Child", name)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"child":%q,"role":%q}}`, name, r.Header.Get(protocol.HeaderRole))
	})
	hs := httptest.NewUnstartedServer(mux)
	if o.addr != "" {
		l, err := net.Listen("tcp", o.addr)
		if err != nil {
			t.Fatalf("listen %s: %v", o.addr, err)
		}
		hs.Listener.Close()
		hs.Listener = l
	}
	hs.Start()
	c.hs = hs
	c.Base = hs.URL
	c.URL = hs.URL + "/mcp"
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return c
}

// testGateway is a gateway served on a loopback port.
type testGateway struct {
	*Gateway
	URL string
	hs  *httptest.Server
}

func testOptions() *Options {
	return &Options{Logger: quiet, ReadyPollInterval: 20 * time.Millisecond, OpenAttempts: 3,
		OpenRetryDelay: 20 * time.Millisecond, DiscoveryRetryMax: 200 * time.Millisecond}
}

// startGateway serves a gateway for cfg and waits until /readyz is 200
// (unless noWait).
func startGateway(t testing.TB, cfg *Config, opts *Options, noWait ...bool) *testGateway {
	t.Helper()
	if opts == nil {
		opts = testOptions()
	}
	if cfg.TrajectoryFile == "" {
		cfg.TrajectoryFile = t.TempDir() + "/trajectory.jsonl"
	}
	g, err := New(cfg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	hs := httptest.NewServer(g.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		g.Close()
	})
	g.Start()
	tg := &testGateway{Gateway: g, URL: hs.URL, hs: hs}
	if len(noWait) == 0 || !noWait[0] {
		waitFor(t, "gateway ready", func() bool {
			st, _ := tg.get(t, "/readyz", nil)
			return st == http.StatusOK
		})
	}
	return tg
}

func serversOf(children ...*testChild) []Server {
	var out []Server
	for _, c := range children {
		out = append(out, Server{Name: c.name, URL: c.URL})
	}
	return out
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

func (tg *testGateway) do(t testing.TB, method, path string, hdr map[string]string, body string) (int, []byte, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, tg.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

func (tg *testGateway) get(t testing.TB, path string, hdr map[string]string) (int, []byte) {
	st, b, _ := tg.do(t, http.MethodGet, path, hdr, "")
	return st, b
}

func (tg *testGateway) post(t testing.TB, path string, hdr map[string]string, body string) (int, []byte) {
	st, b, _ := tg.do(t, http.MethodPost, path, hdr, body)
	return st, b
}

func role(r string) map[string]string { return map[string]string{protocol.HeaderRole: r} }

// mcpClient connects an mcp-go client to the gateway's /mcp.
type mcpClient struct {
	c       *client.Client
	changed atomic.Int64
}

func (tg *testGateway) mcpClient(t testing.TB, roleName string) *mcpClient {
	t.Helper()
	hdr := map[string]string{}
	if roleName != "" {
		hdr[protocol.HeaderRole] = roleName
	}
	tr, err := transport.NewStreamableHTTP(tg.URL+"/mcp", transport.WithHTTPHeaders(hdr),
		transport.WithContinuousListening(), transport.WithHTTPLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	mc := &mcpClient{c: client.NewClient(tr)}
	mc.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			mc.changed.Add(1)
		}
	})
	ctx := context.Background()
	if err := mc.c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mc.c.Close() })
	if _, err := mc.c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.ProtocolVersion20251125, ClientInfo: mcp.Implementation{Name: "test", Version: "0"}}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	// The client opens its listening GET stream on its own schedule (a GET
	// before the session exists is refused, and mcp-go retries after a
	// second). Tests that count notifications start once it is open.
	id := mc.c.GetTransport().GetSessionId()
	waitFor(t, "the client's listening stream", func() bool {
		s := tg.mcp.sessions.get(id)
		if s == nil {
			return false
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.stream != nil
	})
	return mc
}

// raw sends a raw JSON-RPC request and returns the raw result.
func (mc *mcpClient) raw(t testing.TB, method string, params any) json.RawMessage {
	t.Helper()
	resp, err := mc.c.GetTransport().SendRequest(context.Background(), transport.JSONRPCRequest{
		JSONRPC: "2.0", ID: mcp.NewRequestId(time.Now().UnixNano()), Method: method, Params: params})
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if resp.Error != nil {
		t.Fatalf("%s: JSON-RPC error %d %s", method, resp.Error.Code, resp.Error.Message)
	}
	return resp.Result
}

func (mc *mcpClient) toolNames(t testing.TB) []string {
	t.Helper()
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(mc.raw(t, "tools/list", map[string]any{}), &res); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range res.Tools {
		out = append(out, x.Name)
	}
	return out
}

type callOut struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

func (c callOut) text() string {
	var s []string
	for _, x := range c.Content {
		s = append(s, x.Text)
	}
	return strings.Join(s, "\n")
}

func (mc *mcpClient) call(t testing.TB, name string, args any) callOut {
	t.Helper()
	p := map[string]any{"name": name}
	if args != nil {
		p["arguments"] = args
	}
	var out callOut
	if err := json.Unmarshal(mc.raw(t, "tools/call", p), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSONMap(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, b)
	}
	return m
}

// newLoopbackServer serves h on a loopback port until the test ends.
func newLoopbackServer(t testing.TB, h http.Handler) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL
}
