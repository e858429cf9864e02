package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/protocol"
)

// lateEOFCheck is a request body whose reads after EOF wait for hold. In
// production nothing holds them: it stands in for the scheduler. Having
// sent a Content-Length body, http.Transport reads it once more to check
// it was not longer than declared (transferWriter.writeBody); the body
// bytes are already on the wire by then, so on a loaded machine the env
// can answer, and the gateway can start relaying that answer, before the
// transport's goroutine gets the CPU back for that read.
type lateEOFCheck struct {
	rc   io.ReadCloser
	hold <-chan struct{}
	eof  bool
}

func (b *lateEOFCheck) Read(p []byte) (int, error) {
	if b.eof {
		<-b.hold
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *lateEOFCheck) Close() error { return b.rc.Close() }

// stallListener hands out connections whose writes stop after the first
// `after` bytes until release is closed, or fail once the peer has closed
// the connection (seen by a read, as the server's background read sees
// it). A connection that stalls is sent on stalled.
type stallListener struct {
	net.Listener
	after   int
	release chan struct{}
	stalled chan *stallConn
}

func (l *stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c, l: l, peerClosed: make(chan struct{})}, nil
}

type stallConn struct {
	net.Conn
	l          *stallListener
	written    int
	peerClosed chan struct{}
	once       sync.Once
}

func (c *stallConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		c.once.Do(func() { close(c.peerClosed) })
	}
	return n, err
}

func (c *stallConn) Write(p []byte) (int, error) {
	sent := 0
	if c.written < c.l.after {
		k := min(len(p), c.l.after-c.written)
		n, err := c.Conn.Write(p[:k])
		c.written += n
		if sent = n; err != nil || k == len(p) {
			return sent, err
		}
		select {
		case c.l.stalled <- c:
		default:
		}
	}
	select {
	case <-c.l.release:
	case <-c.peerClosed:
		return sent, net.ErrClosed
	}
	n, err := c.Conn.Write(p[sent:])
	c.written += n
	return sent + n, err
}

// TestProxyAnswerSurvivesLateBodyEOFCheck is the office bundle's cut
// data/get (docs/rough_edges.md) made deterministic. A data/get posted
// through /svc/mcp-email/agentenv reaches a real envsdk env, whose answer
// the gateway starts relaying while its transport has not yet made the
// final read of the inbound body. Writing the response headers makes
// net/http's server drain and close that body ((*chunkWriter).writeHeader);
// the transport's late read then fails with "http: invalid Read on closed
// Body", its writeLoop tears down the env connection, and the answer is
// cut: "unexpected EOF" for the client, "proxy response failed after N
// bytes: use of closed network connection" in the gateway's log.
func TestProxyAnswerSurvivesLateBodyEOFCheck(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	s := envsdk.New(&protocol.EnvCard{Name: "email"}, &envsdk.Options{Getenv: func(string) string { return "" }, DisableMCP: true, Logger: quiet})
	s.HandleGet(func(context.Context) ([]protocol.Part, error) {
		return []protocol.Part{{Kind: protocol.PartKindData, Data: json.RawMessage(`{"big":"` + big + `"}`)}}, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The response head and 40 KiB of the body (more than the proxy's 32 KiB
	// copy buffer, so a first piece reaches the client), then the env's
	// writes stall until the test knows how the proxied request ended.
	sl := &stallListener{Listener: ln, after: 40 << 10, release: make(chan struct{}), stalled: make(chan *stallConn, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, sl) }()
	release := sync.OnceFunc(func() { close(sl.release) })
	t.Cleanup(func() { release(); cancel(); <-served })

	tg := startGateway(t, &Config{RESTProxies: []Upstream{{Key: "mcp-email", URL: "http://" + ln.Addr().String()}}}, nil)
	sawFirst := make(chan struct{})
	wrote := make(chan error, 1)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
			WroteRequest: func(i httptrace.WroteRequestInfo) {
				select {
				case wrote <- i.Err:
				default:
				}
			},
		}))
		r.Body = &lateEOFCheck{rc: r.Body, hold: sawFirst}
		tg.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	req, _ := http.NewRequest(http.MethodPost, front.URL+"/svc/mcp-email/agentenv",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"data/get","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatalf("first byte: %v", err)
	}
	close(sawFirst)
	// The request write has ended either way; when it failed, the gateway
	// drops the env connection (which the env sees) before the env has
	// sent the rest, so the outcome below does not depend on timing.
	if werr := <-wrote; werr == nil {
		release()
	} else {
		t.Logf("gateway's proxied request write failed: %v", werr)
		<-(<-sl.stalled).peerClosed
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("answer cut after %d bytes: %v", 1+len(rest), err)
	}
	var out struct {
		Result protocol.GetResult `json:"result"`
	}
	if err := json.Unmarshal(append(first, rest...), &out); err != nil || len(out.Result.Parts) != 1 ||
		!bytes.Contains(out.Result.Parts[0].Data, []byte(big)) {
		t.Fatalf("answer %d bytes, parts %d: %v", 1+len(rest), len(out.Result.Parts), err)
	}
}

// An env answer cut mid-body reaches the client of POST /agentenv as a
// cut, not as a shorter answer that looks complete.
func TestDataPlaneForwardsACutAnswerAsACut(t *testing.T) {
	env := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"result":{"parts":[`)
		buf.Flush()
	}))
	tg := startGateway(t, &Config{RESTProxies: []Upstream{{Key: "mcp-email", URL: env}}}, nil)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Post(tg.URL+"/agentenv", "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"data/get","params":{}}`))
	if err != nil {
		return // cut before the head: the client knows
	}
	defer resp.Body.Close()
	if b, err := io.ReadAll(resp.Body); err == nil {
		t.Fatalf("a cut answer arrived as a complete %d-byte body: %s", len(b), b)
	}
}
