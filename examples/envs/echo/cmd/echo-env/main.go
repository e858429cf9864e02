// Command echo-env serves the echo environment on $MCP_HOST:$MCP_PORT
// (default 0.0.0.0:18765) until SIGTERM.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentenv/agentenv/examples/envs/echo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := echo.New(nil).Run(ctx); err != nil {
		slog.Error("echo-env", "err", err)
		os.Exit(1)
	}
}
