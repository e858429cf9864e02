package envsdk_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/protocol"
)

// Cancelling Serve's context drains the in-flight request and ends open
// MCP streams, then Serve returns nil.
func TestServeDrainsOnCancel(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	s := envsdk.New(&protocol.EnvCard{Name: "x"}, &envsdk.Options{Getenv: noEnv})
	s.HandleReset(func(context.Context) error {
		close(started)
		<-release
		return nil
	})
	envsdk.AddTool(s, &envsdk.Tool{Name: "t"}, func(context.Context, *envsdk.Request, struct{}) (string, error) { return "ok", nil })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // a failed assertion before the explicit cancel must not leave Serve running
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	// An MCP client holding the server's GET stream open.
	tr, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithContinuousListening(),
		transport.WithHTTPLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	defer c.Close()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}

	type result struct {
		status int
		body   string
		err    error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Post(base+"/agentenv", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"data/reset"}`))
		if err != nil {
			res <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		res <- result{status: resp.StatusCode, body: string(b)}
	}()
	<-started
	cancel()
	close(release)
	r := <-res
	if r.err != nil || r.status != 200 || r.body != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("in-flight request: %+v", r)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v", err)
	}
}
