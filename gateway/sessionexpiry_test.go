package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentenv/agentenv/protocol"
)

// inProcessMCP drives a gateway's handler directly (no sockets), so the
// whole gateway can run in a synctest bubble on its fake clock.
type inProcessMCP struct {
	t testing.TB
	h http.Handler
}

func (c inProcessMCP) do(ctx context.Context, method, sid, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, method, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set(protocol.HeaderMCPSessionID, sid)
		req.Header.Set(protocol.HeaderMCPProtocolVersion, "2025-11-25")
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, req)
	return w
}

func (c inProcessMCP) initialize() string {
	c.t.Helper()
	w := c.do(context.Background(), http.MethodPost, "", initializeBody)
	sid := w.Header().Get(protocol.HeaderMCPSessionID)
	if w.Code != http.StatusOK || sid == "" {
		c.t.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	if w := c.do(context.Background(), http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); w.Code != http.StatusAccepted {
		c.t.Fatalf("initialized: %d %s", w.Code, w.Body)
	}
	return sid
}

// list is tools/list on the session; its status says whether the session
// is known (200) or ended (404).
func (c inProcessMCP) list(sid string) int {
	return c.do(context.Background(), http.MethodPost, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`).Code
}

// ping is answered by mcp-go, which validates the session through the
// gateway's session table.
func (c inProcessMCP) ping(sid string) int {
	return c.do(context.Background(), http.MethodPost, sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`).Code
}

// bubbleGateway is a gateway with no backing servers, built inside the
// current synctest bubble and closed when the test ends.
func bubbleGateway(t *testing.T, idle time.Duration) (*Gateway, inProcessMCP) {
	t.Helper()
	g, err := New(&Config{SessionIdleTimeout: idle, TrajectoryFile: t.TempDir() + "/trajectory.jsonl"}, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	g.Start()
	synctest.Wait()
	if !g.started.Load() {
		t.Fatal("gateway with no servers did not start")
	}
	return g, inProcessMCP{t: t, h: g.Handler()}
}

// A session idle for longer than the timeout ends: its requests get 404
// (the MCP answer that makes a client initialize again), on the gateway's
// own routes and on mcp-go's, and mcp-go forgets it too. Requests keep a
// session alive; an open listening stream does not, and ends with it.
func TestSessionIdleExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, c := bubbleGateway(t, 30*time.Minute)
		idle, active := c.initialize(), c.initialize()

		time.Sleep(20 * time.Minute)
		if st := c.list(active); st != http.StatusOK {
			t.Fatalf("active session after 20 min: %d", st)
		}
		time.Sleep(15 * time.Minute) // idle: 35 min; active: 15 min
		synctest.Wait()
		if st := c.list(idle); st != http.StatusNotFound {
			t.Fatalf("tools/list on a session idle for 35 min: %d, want 404", st)
		}
		if st := c.ping(idle); st != http.StatusNotFound {
			t.Fatalf("ping on a session idle for 35 min: %d, want 404", st)
		}
		if err := g.mcp.srv.SendNotificationToSpecificClient(idle, string(mcp.MethodNotificationToolsListChanged), nil); err == nil {
			t.Fatal("mcp-go still holds the expired session")
		}
		if st := c.ping(active); st != http.StatusOK {
			t.Fatalf("ping on a session used 15 min ago: %d", st)
		}

		// An open listening stream does not keep an idle session alive:
		// expiry ends the stream too (the GET's answer ends).
		ended := make(chan *httptest.ResponseRecorder, 1)
		go func() { ended <- c.do(context.Background(), http.MethodGet, active, "") }()
		synctest.Wait()
		select {
		case w := <-ended:
			t.Fatalf("listening stream ended at once: %d %s", w.Code, w.Body)
		default:
		}
		if n := g.mcp.streams(); n != 1 {
			t.Fatalf("%d listening streams held, want 1", n)
		}
		time.Sleep(31 * time.Minute)
		synctest.Wait()
		select {
		case w := <-ended:
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/event-stream" {
				t.Fatalf("listening stream answered %d %q", w.Code, w.Header().Get("Content-Type"))
			}
		default:
			t.Fatal("the listening stream of an expired session is still open")
		}
		if st := c.list(active); st != http.StatusNotFound {
			t.Fatalf("listening session idle for 31 min: %d, want 404", st)
		}
		if n := g.mcp.streams(); n != 0 {
			t.Fatalf("%d listening streams held after expiry", n)
		}
		if w := c.do(context.Background(), http.MethodGet, active, ""); w.Code != http.StatusNotFound {
			t.Fatalf("GET on an expired session: %d, want 404", w.Code)
		}
		// The client initializes again and carries on.
		if st := c.list(c.initialize()); st != http.StatusOK {
			t.Fatalf("new session: %d", st)
		}
	})
}

func TestSessionIdleExpiryOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := bubbleGateway(t, -1)
		sid := c.initialize()
		time.Sleep(100 * time.Hour)
		synctest.Wait()
		if st := c.list(sid); st != http.StatusOK {
			t.Fatalf("with expiry off, a session idle for 100 h: %d", st)
		}
	})
}

// TestAbandonedSessionsMemory measures what 5,000 initialized and
// abandoned sessions hold, and that expiry gives it back.
func TestAbandonedSessionsMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("opens 5,000 sessions (slow under the race detector)")
	}
	synctest.Test(t, func(t *testing.T) {
		const sessions = 5000
		g, c := bubbleGateway(t, 30*time.Minute)
		heap := func() int64 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return int64(m.HeapAlloc)
		}
		before := heap()
		for range sessions {
			c.initialize()
		}
		held := heap() - before
		time.Sleep(31 * time.Minute)
		synctest.Wait()
		if n := len(g.mcp.sessions.all()); n != 0 {
			t.Fatalf("%d of %d abandoned sessions still held", n, sessions)
		}
		left := heap() - before
		t.Logf("%d abandoned sessions: %.1f MB held, %.1f MB after expiry", sessions, float64(held)/1e6, float64(left)/1e6)
		// What is left is mostly the heap's own noise (about 0.4 MB): a
		// session table entry or mcp-go state per session that expiry
		// missed would leave far more than 1 MB.
		if left > max(held/4, 1<<20) {
			t.Errorf("expiry gave back too little: %d bytes held before, %d after", held, left)
		}
	})
}
