package agentsdk

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// guard bounds every wait in these tests so a broken server fails them
// instead of hanging; it asserts nothing about speed.
const guard = 30 * time.Second

func recvWithin[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatalf("%s: nothing within the %v guard", what, guard)
		panic("unreachable")
	}
}

// notifyListener reports each accepted connection's remote address and
// its own closing, which is the first step of http.Server.Shutdown.
type notifyListener struct {
	net.Listener
	accepted chan string
	once     sync.Once
	closed   chan struct{}
}

func (l *notifyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted <- c.RemoteAddr().String()
	}
	return c, err
}

func (l *notifyListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// waitAccepted returns once the server has accepted the connection dialed
// from local.
func (l *notifyListener) waitAccepted(t *testing.T, local string) {
	t.Helper()
	for recvWithin(t, l.accepted, "accept") != local {
	}
}

type postResult struct {
	status int
	body   string
	err    error
}

// blockedSend serves an agent whose Run blocks until release is closed,
// with the given shutdown grace period, and returns once one blocking
// message/send is in Run.
func blockedSend(t *testing.T, grace time.Duration) (ln *notifyListener, cancel context.CancelFunc, done <-chan error, release chan struct{}, res <-chan postResult) {
	t.Helper()
	started := make(chan struct{})
	release = make(chan struct{})
	agent := Handler(func(context.Context, *Task) (*Result, error) {
		close(started)
		<-release
		return &Result{Parts: []protocol.Part{protocol.TextPart("finished")}}, nil
	})
	s, err := New(&Card{Name: "x"}, &Options{Agent: agent, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.shutdownTimeout = grace
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln = &notifyListener{Listener: inner, accepted: make(chan string, 64), closed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ctx, ln) }()

	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	resc := make(chan postResult, 1)
	go func() {
		resp, err := client.Post("http://"+ln.Addr().String()+protocol.A2APath, "application/json", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":true}}}`))
		if err != nil {
			resc <- postResult{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		resc <- postResult{status: resp.StatusCode, body: string(b), err: err}
	}()
	recvWithin(t, started, "agent start")
	return ln, cancel, errc, release, resc
}

func wantFinished(t *testing.T, r postResult) {
	t.Helper()
	if r.err != nil || r.status != 200 || !strings.Contains(r.body, `"state":"completed"`) || !strings.Contains(r.body, `"finished"`) {
		t.Fatalf("in-flight request: %+v", r)
	}
}

// A connection that was dialed but never used does not hold up shutdown:
// the server closes it as soon as shutdown starts.
//
// The grace period is below net/http's rule of counting a silent new
// connection as idle after 5 s, so without that closing the raw
// connection stays open until the grace period runs out, and Serve then
// returns the deadline error. The test waits for the server to close the
// raw connection while the request is held, and only then lets the
// request finish: it must answer 200 and Serve return nil.
func TestShutdownClosesUnusedConnection(t *testing.T) {
	ln, cancel, done, release, res := blockedSend(t, 4*time.Second)
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ln.waitAccepted(t, raw.LocalAddr().String())

	cancel()
	if err := raw.SetReadDeadline(time.Now().Add(guard)); err != nil {
		t.Fatal(err)
	}
	if n, err := raw.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("unused connection: read %d, %v; want the server to close it", n, err)
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}
	close(release)
	wantFinished(t, recvWithin(t, res, "in-flight response"))
	if err := recvWithin(t, done, "Serve"); err != nil {
		t.Fatalf("Serve = %v", err)
	}
}

// A request already in the agent when shutdown starts still completes.
func TestShutdownFinishesInFlightRequest(t *testing.T) {
	ln, cancel, done, release, res := blockedSend(t, guard)
	cancel()
	recvWithin(t, ln.closed, "listener close") // Shutdown has begun
	select {
	case err := <-done:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}
	close(release)
	wantFinished(t, recvWithin(t, res, "in-flight response"))
	if err := recvWithin(t, done, "Serve"); err != nil {
		t.Fatalf("Serve = %v", err)
	}
}

// When the grace period runs out, Serve cuts the requests still running
// instead of returning with their connections open: the blocked client
// sees its connection end. (Before, its request hung until the agent
// finished, long after Serve had returned.)
func TestShutdownCutsRequestsPastTheGracePeriod(t *testing.T) {
	_, cancel, done, release, res := blockedSend(t, time.Millisecond)
	defer close(release)
	cancel()
	if err := recvWithin(t, done, "Serve"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Serve: %v, want the grace deadline", err)
	}
	if r := recvWithin(t, res, "the cut request"); r.err == nil {
		t.Fatalf("the request outlived Serve: %+v", r)
	}
}
