package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// countedChild serves an MCP handler on loopback through a listener that
// counts the connections it accepts, and records which connections
// carried tools/call requests.
type countedChild struct {
	URL      string
	hs       *httptest.Server
	accepted atomic.Int64
	mu       sync.Mutex
	callConn map[int64]bool // connections that carried a tools/call
}

type connKey struct{}

// countingListener numbers every accepted connection.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func startCountedChild(t *testing.T, h http.Handler) *countedChild {
	t.Helper()
	cc := &countedChild{callConn: map[int64]bool{}}
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				cc.mu.Lock()
				cc.callConn[r.Context().Value(connKey{}).(int64)] = true
				cc.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	hs.Listener = countingListener{Listener: hs.Listener, n: &cc.accepted}
	hs.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, cc.accepted.Load())
	}
	hs.Start()
	cc.hs = hs
	t.Cleanup(cc.close)
	cc.URL = hs.URL + "/mcp"
	return cc
}

func (cc *countedChild) close() {
	cc.hs.CloseClientConnections()
	cc.hs.Close()
}

// callConns is how many connections carried tools/call requests.
func (cc *countedChild) callConns() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.callConn)
}

// sdkEchoHandler is the official go-sdk's streamable-HTTP server with one
// echo tool; it answers requests as event streams (its default).
func sdkEchoHandler(name string) http.Handler {
	s := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: name + "_echo", Description: "Echo the arguments."},
		func(_ context.Context, _ *sdk.CallToolRequest, in map[string]any) (*sdk.CallToolResult, any, error) {
			b, _ := json.Marshal(in)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil, nil
		})
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
}

// mcpgoEchoHandler is mcp-go's streamable-HTTP server with one echo
// tool; it answers requests as JSON.
func mcpgoEchoHandler(name string) http.Handler {
	srv := server.NewMCPServer(name, "1", server.WithToolCapabilities(true))
	srv.AddTools(benchEchoTool(name + "_echo"))
	return server.NewStreamableHTTPServer(srv, server.WithStreamableHTTPProtocolVersions(supportedMCPVersions...),
		server.WithDisableLocalhostProtection(true), server.WithStreamableHTTPLogger(quiet), server.WithStateful(true))
}

// TestSequentialCallsReuseChildConnections: 1,000 calls one after the
// other to a child that answers as an event stream (the official go-sdk)
// travel over at most two connections, as they do to one that answers
// JSON (mcp-go): the gateway reads a streamed answer to its end and keeps
// the connection instead of dialing per call.
func TestSequentialCallsReuseChildConnections(t *testing.T) {
	for _, tc := range []struct {
		kind string
		h    http.Handler
	}{
		{"go-sdk", sdkEchoHandler("items")},
		{"mcp-go", mcpgoEchoHandler("items")},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			cc := startCountedChild(t, tc.h)
			tg := startGateway(t, &Config{Servers: []Server{{Name: "items", URL: cc.URL}}}, nil)
			mc := tg.mcpClient(t, "")
			before := cc.accepted.Load()
			for i := range 1000 {
				if got := mc.call(t, "items_echo", map[string]any{"msg": i}).text(); got != fmt.Sprintf(`{"msg":%d}`, i) {
					t.Fatalf("call %d answered %q", i, got)
				}
			}
			if n := cc.accepted.Load() - before; n > 2 {
				t.Errorf("1,000 sequential calls opened %d connections to the child, want at most 2", n)
			}
		})
	}
}

// TestHeldOpenStreamDoesNotHoldTheCall: a child that keeps its event
// stream open after the response (allowed, if unusual) does not hold the
// call: the answer reaches the agent while the child still holds the
// stream. The next call goes over another connection, nothing waits on
// the held ones, and closing the gateway releases them all and leaves no
// goroutine behind.
func TestHeldOpenStreamDoesNotHoldTheCall(t *testing.T) {
	before := runtime.NumGoroutine()
	var holding atomic.Int64
	release := make(chan struct{})
	inner := mcpgoEchoHandler("items")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if r.Method != http.MethodPost || json.Unmarshal(body, &m) != nil || m.Method != "tools/call" {
			r.Body = io.NopCloser(bytes.NewReader(body))
			inner.ServeHTTP(w, r)
			return
		}
		holding.Add(1)
		defer holding.Add(-1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"held\"}]}}\n\n", m.ID)
		w.(http.Flusher).Flush()
		select { // hold the stream open after the answer
		case <-release:
		case <-r.Context().Done():
		}
	})
	cc := startCountedChild(t, h)
	g, err := New(&Config{Servers: []Server{{Name: "items", URL: cc.URL}}, TrajectoryFile: t.TempDir() + "/t.jsonl"}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(g.Handler())
	g.Start()
	tg := &testGateway{Gateway: g, URL: hs.URL, hs: hs}
	waitFor(t, "gateway ready", func() bool { st, _ := tg.get(t, "/readyz", nil); return st == http.StatusOK })
	mc := tg.mcpClient(t, "")
	for i := 1; i <= 3; i++ {
		if got := mc.call(t, "items_echo", map[string]any{}).text(); got != "held" {
			t.Fatalf("call %d answered %q", i, got)
		}
		// The answer arrived while the child still holds every stream.
		if n := holding.Load(); n != int64(i) {
			t.Fatalf("after call %d the child holds %d streams, want %d", i, n, i)
		}
	}
	if n := cc.callConns(); n != 3 {
		t.Errorf("3 calls on held streams used %d connections, want 3", n)
	}

	// Closing the gateway closes the connections it still owes a stream
	// end: the child sees them go without being released.
	mc.c.Close()
	hs.CloseClientConnections()
	hs.Close()
	g.Close()
	waitFor(t, "the child's held streams to end", func() bool { return holding.Load() == 0 })
	close(release)
	cc.close()
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}
