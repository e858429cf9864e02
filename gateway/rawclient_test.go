package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
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
	ex.finish()
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
		if !c.alive() {
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

// trickle hands out its input one byte per read, with a "nothing yet"
// between bytes, as a socket read without waiting may.
type trickle struct {
	in   string
	wait bool
}

func (r *trickle) Read(p []byte) (int, error) {
	if len(r.in) == 0 {
		return 0, io.EOF
	}
	if r.wait = !r.wait; r.wait {
		return 0, errWouldBlock
	}
	p[0], r.in = r.in[0], r.in[1:]
	return 1, nil
}

// A chunked body read as its bytes trickle in, with errWouldBlock between
// them, decodes the same as one read at once and leaves the connection at
// the next response: no partial step is lost to a read that had to stop.
func TestChunkedBodyResumesAfterWouldBlock(t *testing.T) {
	in := "3\r\nabc\r\n1;ext=1\r\nd\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT"
	br := bufio.NewReaderSize(&trickle{in: in}, 16)
	b := &chunkedBody{br: br}
	var got []byte
	buf := make([]byte, 2)
	for {
		n, err := b.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil && err != errWouldBlock {
			t.Fatalf("after %q: %v", got, err)
		}
	}
	var rest []byte
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			break
		}
		if err == nil {
			rest = append(rest, c)
		}
	}
	if string(got) != "abcd" || string(rest) != "NEXT" {
		t.Fatalf("body %q, rest %q", got, rest)
	}
}

// streamServer answers every request with an event stream whose end (the
// last chunk) it writes only when told, on a bare TCP listener so the test
// knows when those bytes are on their way.
type streamServer struct {
	ln       net.Listener
	accepted atomic.Int64
	end      chan chan struct{} // a request for the end of the current stream
}

func startStreamServer(t *testing.T) *streamServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &streamServer{ln: ln, end: make(chan chan struct{})}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			go s.serve(c)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *streamServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		event := "event: message\ndata: answer\n\n"
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
			strconv.FormatInt(int64(len(event)), 16)+"\r\n"+event+"\r\n"); err != nil {
			return
		}
		done := <-s.end
		if done == nil {
			return // the channel was closed
		}
		_, err = io.WriteString(c, "0\r\n\r\n")
		close(done) // the end is in the client's socket buffer (loopback)
		if err != nil {
			return
		}
	}
}

// endStream makes the server write the end of the stream it holds.
func (s *streamServer) endStream() {
	done := make(chan struct{})
	s.end <- done
	<-done
}

// streamCall sends one request and reads its answer up to the event, as
// readSSE does, leaving the end of the stream owed.
func streamCall(t *testing.T, rc *rawClient) {
	t.Helper()
	ex, _, err := rc.do(context.Background(), []byte("Content-Type: application/json\r\n"), net.Buffers{[]byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	want := "event: message\ndata: answer\n\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(ex.resp.body, got); err != nil || string(got) != want {
		t.Fatalf("answer %q, %v", got, err)
	}
	ex.finish()
}

// A connection whose stream ends after the answer was taken goes back to
// work once the end arrived, without anything waiting for it; one whose
// stream is still open is passed over for a new connection, and closing
// the client closes it.
func TestRawClientReusesAConnectionOnceItsStreamEnded(t *testing.T) {
	s := startStreamServer(t)
	rc := newRawClient("http://" + s.ln.Addr().String() + "/mcp")
	streamCall(t, rc) // the stream stays open: its connection is owed
	rc.mu.Lock()
	owed, idle := len(rc.owed), len(rc.idle)
	rc.mu.Unlock()
	if owed != 1 || idle != 0 {
		t.Fatalf("after an answer on an open stream: %d owed, %d ready; want 1, 0", owed, idle)
	}
	s.endStream()
	streamCall(t, rc) // reuses the first connection, whose stream ended
	if n := s.accepted.Load(); n != 1 {
		t.Fatalf("%d connections; want the first one reused", n)
	}
	streamCall(t, rc) // the second stream is still open: a new connection
	if n := s.accepted.Load(); n != 2 {
		t.Fatalf("%d connections; want a second one beside the held stream", n)
	}
	rc.close()
	// Both connections are closed: the server's serve loops end when
	// their next read fails, after the streams they hold are ended.
	close(s.end)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.owed)+len(rc.idle) != 0 {
		t.Fatal("connections left in a closed client")
	}
}
