package gateway

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentenv/agentenv/protocol"
)

// streams counts the sessions holding a listening stream.
func (f *mcpFront) streams() int {
	n := 0
	for _, s := range f.sessions.all() {
		s.mu.Lock()
		if s.stream != nil {
			n++
		}
		s.mu.Unlock()
	}
	return n
}

// listenConn opens a session's listening stream on a raw loopback
// connection and returns the response (its body is the event stream) and
// the connection.
func listenConn(t *testing.T, base, sid string) (*http.Response, net.Conn) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// A guard, not an assertion: a stream that never answers fails the
	// test instead of hanging it.
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	req := "GET /mcp HTTP/1.1\r\nHost: " + u.Host + "\r\nAccept: text/event-stream\r\n" +
		protocol.HeaderMCPSessionID + ": " + sid + "\r\n" + protocol.HeaderMCPProtocolVersion + ": 2025-11-25\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodGet})
	if err != nil {
		t.Fatal(err)
	}
	return resp, conn
}

// readEvent reads one server-sent event's data line.
func readEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var data string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading an event: %v (so far %q)", err, data)
		}
		line = strings.TrimRight(line, "\n")
		if line == "" && data != "" {
			return data
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = d
		}
	}
}

const listChangedData = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`

// The listening stream on /mcp: an event stream in chunked HTTP/1.1 that
// carries list_changed when the session's tool view changes, is told on
// opening of a change it missed while it had none, is replaced by a newer
// GET on the same session, and ends cleanly on DELETE.
func TestListeningStreamWire(t *testing.T) {
	_, tg := hiddenToolEnv(t, &Config{})
	sid := mcpInit(t, tg.URL)
	s := hdr{protocol.HeaderMCPSessionID, sid}

	resp, _ := listenConn(t, tg.URL, sid)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" ||
		resp.Header.Get("Cache-Control") != "no-cache" || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("GET /mcp: %d %v %v", resp.StatusCode, resp.Header, resp.TransferEncoding)
	}
	waitFor(t, "the stream attached", func() bool { return tg.mcp.streams() == 1 })
	events := bufio.NewReader(resp.Body)
	if st, b := tg.post(t, "/tools/disable", nil, `{"role":"default","tools":["mail_send"]}`); st != 200 {
		t.Fatalf("disable = %d %s", st, b)
	}
	if got := readEvent(t, events); got != listChangedData {
		t.Fatalf("event %q, want %q", got, listChangedData)
	}

	// A newer GET replaces the stream; the older one ends cleanly.
	resp2, conn2 := listenConn(t, tg.URL, sid)
	if resp2.StatusCode != http.StatusOK {
		t.Fatalf("second GET: %d", resp2.StatusCode)
	}
	if rest, err := io.ReadAll(events); err != nil || len(rest) != 0 {
		t.Fatalf("replaced stream: %q, %v; want a clean end", rest, err)
	}
	waitFor(t, "one stream per session", func() bool { return tg.mcp.streams() == 1 })

	// A change while the session has no stream is told when it opens one.
	conn2.Close()
	waitFor(t, "the stream gone", func() bool { return tg.mcp.streams() == 0 })
	if st, b := tg.post(t, "/tools/enable", nil, `{"role":"default","tools":["mail_send"]}`); st != 200 {
		t.Fatalf("enable = %d %s", st, b)
	}
	resp3, _ := listenConn(t, tg.URL, sid)
	events = bufio.NewReader(resp3.Body)
	if got := readEvent(t, events); got != listChangedData {
		t.Fatalf("event on opening %q, want %q", got, listChangedData)
	}

	// DELETE ends the session and its stream.
	if st, _, b := rawHTTP(t, tg.URL, "DELETE", "/mcp", []hdr{s}, ""); st != http.StatusOK {
		t.Fatalf("DELETE = %d %s", st, b)
	}
	if rest, err := io.ReadAll(events); err != nil || len(rest) != 0 {
		t.Fatalf("stream of a deleted session: %q, %v; want a clean end", rest, err)
	}
	if st, _, _ := rawHTTP(t, tg.URL, "GET", "/mcp", []hdr{s}, ""); st != http.StatusNotFound {
		t.Fatalf("GET on a deleted session = %d, want 404", st)
	}
	// Versions the transport refuses are still refused.
	sid2 := mcpInit(t, tg.URL)
	if st, _, _ := rawHTTP(t, tg.URL, "GET", "/mcp", []hdr{{protocol.HeaderMCPSessionID, sid2}, {protocol.HeaderMCPProtocolVersion, "1999-01-01"}}, ""); st != http.StatusBadRequest {
		t.Fatalf("GET with an unknown protocol version = %d, want 400", st)
	}
}

// A client that closes its listening connection frees the stream (its
// reader goroutine ends), and the gateway closing ends every stream.
func TestListeningStreamClientGoes(t *testing.T) {
	tg := startGateway(t, &Config{}, nil)
	sid := mcpInit(t, tg.URL)
	_, conn := listenConn(t, tg.URL, sid)
	waitFor(t, "the stream attached", func() bool { return tg.mcp.streams() == 1 })
	conn.Close()
	waitFor(t, "the stream freed", func() bool { return tg.mcp.streams() == 0 })

	resp, _ := listenConn(t, tg.URL, mcpInit(t, tg.URL))
	waitFor(t, "the stream attached", func() bool { return tg.mcp.streams() == 1 })
	tg.Close() // waits for the streams' readers
	if rest, err := io.ReadAll(resp.Body); err != nil || len(rest) != 0 {
		t.Fatalf("stream at gateway close: %q, %v; want a clean end", rest, err)
	}
}

// Idle expiry with a short timeout over real connections: the session
// holding only its listening stream ends, the stream with it, and the
// session's id is then unknown (404).
func TestListeningSessionExpires(t *testing.T) {
	tg := startGateway(t, &Config{SessionIdleTimeout: time.Second}, nil)
	sid := mcpInit(t, tg.URL)
	resp, _ := listenConn(t, tg.URL, sid)
	// Ends within a sweep past the timeout; ReadAll returns at its end
	// (the connection's 20 s deadline guards a stream that never ends).
	if rest, err := io.ReadAll(resp.Body); err != nil || len(rest) != 0 {
		t.Fatalf("stream of an expired session: %q, %v; want a clean end", rest, err)
	}
	s := hdr{protocol.HeaderMCPSessionID, sid}
	if st, _, _ := rawHTTP(t, tg.URL, "POST", "/mcp", []hdr{s}, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`); st != http.StatusNotFound {
		t.Fatalf("tools/list on an expired session = %d, want 404", st)
	}
	if st, _, _ := rawHTTP(t, tg.URL, "GET", "/mcp", []hdr{s}, ""); st != http.StatusNotFound {
		t.Fatalf("GET on an expired session = %d, want 404", st)
	}
	if n := len(tg.mcp.sessions.all()); n != 0 {
		t.Fatalf("%d sessions held after expiry", n)
	}
}

// plainWriter is a ResponseWriter that can neither flush nor hijack.
type plainWriter struct {
	h    http.Header
	code int
}

func (p *plainWriter) Header() http.Header         { return p.h }
func (p *plainWriter) Write(b []byte) (int, error) { return len(b), nil }
func (p *plainWriter) WriteHeader(code int)        { p.code = code }

// Where the answer can neither be taken from net/http nor flushed, a
// listening stream is refused with 405, as the transport always did.
func TestListeningStreamUnsupported(t *testing.T) {
	tg := startGateway(t, &Config{}, nil)
	sid := mcpInit(t, tg.URL)
	req := httptest.NewRequest(http.MethodGet, "/mcp", nil)
	req.Header.Set(protocol.HeaderMCPSessionID, sid)
	w := &plainWriter{h: http.Header{}}
	tg.Handler().ServeHTTP(w, req)
	if w.code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /mcp on a writer that cannot stream: %d, want 405", w.code)
	}
	if n := tg.mcp.streams(); n != 0 {
		t.Fatalf("%d streams held", n)
	}
}

// mcp-go holds the gateway's placeholder for a session, not a session of
// its own (about 10 KB of channels each): it reports the session as never
// initialized, where its own would take the notification.
func TestMCPGoKeepsNoSessionState(t *testing.T) {
	tg := startGateway(t, &Config{}, nil)
	sid := mcpInit(t, tg.URL)
	err := tg.mcp.srv.SendNotificationToSpecificClient(sid, string(mcp.MethodNotificationToolsListChanged), nil)
	if !errors.Is(err, server.ErrSessionNotInitialized) {
		t.Fatalf("mcp-go's session for an initialized session: %v, want its placeholder (%v)", err, server.ErrSessionNotInitialized)
	}
	// mcp-go still answers what it serves on the session.
	if st, _, b := rawHTTP(t, tg.URL, "POST", "/mcp", []hdr{{protocol.HeaderMCPSessionID, sid}}, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); st != http.StatusOK || !strings.Contains(string(b), `"result":{}`) {
		t.Fatalf("ping = %d %s", st, b)
	}
}
