package envsdk_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/envsdk"
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

func listenNotify(t *testing.T) *notifyListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &notifyListener{Listener: ln, accepted: make(chan string, 64), closed: make(chan struct{})}
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

// blockedReset serves an env whose data/reset blocks until release is
// closed, and returns once one data/reset is in its handler.
func blockedReset(t *testing.T, opts *envsdk.Options) (ln *notifyListener, cancel context.CancelFunc, done <-chan error, release chan struct{}, res <-chan postResult) {
	t.Helper()
	started := make(chan struct{})
	release = make(chan struct{})
	s := envsdk.New(&protocol.EnvCard{Name: "x"}, opts)
	s.HandleReset(func(context.Context) error {
		close(started)
		<-release
		return nil
	})
	envsdk.AddTool(s, &envsdk.Tool{Name: "t"}, func(context.Context, *envsdk.Request, struct{}) (string, error) { return "ok", nil })
	ln = listenNotify(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ctx, ln) }()

	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	resc := make(chan postResult, 1)
	go func() {
		resp, err := client.Post("http://"+ln.Addr().String()+"/agentenv", "application/json",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"data/reset"}`))
		if err != nil {
			resc <- postResult{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		resc <- postResult{status: resp.StatusCode, body: string(b), err: err}
	}()
	recvWithin(t, started, "handler start")
	return ln, cancel, errc, release, resc
}

func wantReset(t *testing.T, r postResult) {
	t.Helper()
	if r.err != nil || r.status != 200 || r.body != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("in-flight request: %+v", r)
	}
}

// A connection that was dialed but never used does not hold up shutdown:
// the server closes it as soon as shutdown starts.
//
// The grace period is below net/http's rule of counting a silent new
// connection as idle after 5 s, so without that closing the raw
// connection stays open until the grace period runs out, and the request
// that is still in flight then is cut. The test therefore waits for the
// server to close the raw connection while the request is held, and only
// then lets the request finish: it must answer 200 and Serve return nil.
func TestShutdownClosesUnusedConnection(t *testing.T) {
	ln, cancel, done, release, res := blockedReset(t, &envsdk.Options{
		Getenv: noEnv, Logger: discardLogger(), ShutdownTimeout: 4 * time.Second})

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
	wantReset(t, recvWithin(t, res, "in-flight response"))
	if err := recvWithin(t, done, "Serve"); err != nil {
		t.Fatalf("Serve = %v", err)
	}
}

// A request already in a handler when shutdown starts still completes.
func TestShutdownFinishesInFlightRequest(t *testing.T) {
	ln, cancel, done, release, res := blockedReset(t, &envsdk.Options{
		Getenv: noEnv, Logger: discardLogger(), ShutdownTimeout: guard})
	cancel()
	recvWithin(t, ln.closed, "listener close") // Shutdown has begun
	select {
	case err := <-done:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}
	close(release)
	wantReset(t, recvWithin(t, res, "in-flight response"))
	if err := recvWithin(t, done, "Serve"); err != nil {
		t.Fatalf("Serve = %v", err)
	}
}
