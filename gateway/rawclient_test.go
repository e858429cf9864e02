package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawRoundTrip runs one request through rc and returns the body.
func rawRoundTrip(ctx context.Context, t *testing.T, rc *rawClient, body string) (string, error) {
	t.Helper()
	ex, _, err := rc.do(ctx, []byte("Content-Type: application/json\r\n"), net.Buffers{[]byte(body)})
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(ex.resp.body)
	ex.finish(err == nil)
	return string(b), err
}

func TestRawClientReusesAndSurvivesClosedConnections(t *testing.T) {
	var conns atomic.Int64
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") != "application/json" || r.Method != http.MethodPost {
			http.Error(w, "bad request line or headers", 400)
			return
		}
		if strings.Contains(string(b), "hints") {
			w.Header().Set("Link", "</x>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
		}
		if strings.Contains(string(b), "chunked") {
			w.Write([]byte("part1,"))
			w.(http.Flusher).Flush() // forces a chunked body
		}
		w.Write(b)
	}))
	hs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	hs.Start()
	defer hs.Close()
	rc := newRawClient(hs.URL + "/mcp")
	if rc == nil {
		t.Fatal("no raw client for a plain http URL")
	}
	defer rc.close()
	ctx := context.Background()
	for i, want := range []string{"one", "part1,chunked", "hints", "four"} {
		got, err := rawRoundTrip(ctx, t, rc, strings.TrimPrefix(want, "part1,"))
		if err != nil || got != want {
			t.Fatalf("call %d: %q, %v", i, got, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 4 sequential calls, want 1 (reuse)", n)
	}
	// The server drops its keep-alive connections (a restarted child): the
	// pooled one is recognised as dead and the next call dials again.
	hs.CloseClientConnections()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rc.mu.Lock()
		c := rc.idle[0]
		rc.mu.Unlock()
		if !alive(c.nc) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("closed connection still looks alive")
		}
		time.Sleep(time.Millisecond) // polling a kernel state, not waiting for work
	}
	if got, err := rawRoundTrip(ctx, t, rc, "after"); err != nil || got != "after" {
		t.Fatalf("call after the server closed the connection: %q, %v", got, err)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

func TestRawClientCancelInterruptsAWaitingCall(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	defer hs.Close()
	defer close(release)
	rc := newRawClient(hs.URL)
	defer rc.close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, wrote, err := rc.do(ctx, nil, net.Buffers{[]byte("{}")})
		if !wrote {
			err = errors.New("request not reported as written")
		}
		errc <- err
	}()
	<-arrived
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.idle) != 0 {
		t.Fatal("an interrupted connection went back to the pool")
	}
}

func TestRawClientNotUsedForHTTPSOrProxies(t *testing.T) {
	if newRawClient("https://example.test/mcp") != nil {
		t.Fatal("raw client for https")
	}
	if newRawClient("http://user:pw@example.test/mcp") != nil {
		t.Fatal("raw client for a URL with credentials")
	}
	if newRawClient("http://127.0.0.1:1/mcp") == nil {
		t.Fatal("no raw client for plain http")
	}
}

func TestRawClientRewritesOnAFreshConnectionWhenAReusedOneFailsToWrite(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	defer hs.Close()
	rc := newRawClient(hs.URL)
	defer rc.close()
	// A pooled connection that passes the liveness peek but cannot be
	// written (a pipe has no socket to peek at).
	dead, other := net.Pipe()
	other.Close()
	dead.Close()
	rc.put(&rawConn{nc: dead, br: bufio.NewReader(dead)})
	got, err := rawRoundTrip(context.Background(), t, rc, "again")
	if err != nil || got != "again" {
		t.Fatalf("%q, %v; want the request re-sent on a new connection", got, err)
	}
}
