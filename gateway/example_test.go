package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentenv/agentenv/gateway"
)

// A gateway is built from a Config (normally gateway.ConfigFromEnv) and
// served with Run; /healthz answers as soon as the socket is open.
func Example() {
	dir, _ := os.MkdirTemp("", "gateway-example")
	defer os.RemoveAll(dir)
	cfg, err := gateway.ConfigFromEnv(func(k string) string {
		return map[string]string{
			"MCP_SERVER_NAME":         "office",
			"GATEWAY_TRAJECTORY_FILE": filepath.Join(dir, "trajectory.jsonl"),
		}[k]
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := gateway.New(cfg, &gateway.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, ln) }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(b))

	stop()
	select {
	case err := <-done:
		fmt.Println("stopped:", err)
	case <-time.After(10 * time.Second):
		fmt.Println("did not stop")
	}
	// Output:
	// {"status":"ok"}
	// stopped: <nil>
}

// A malformed variable is a startup error naming it.
func ExampleConfigFromEnv() {
	_, err := gateway.ConfigFromEnv(func(k string) string {
		if k == "INTERNAL_MCP_SERVERS" {
			return "slack,mail,slack"
		}
		return ""
	})
	fmt.Println(err)
	// Output:
	// INTERNAL_MCP_SERVERS: duplicate name "slack"
}
