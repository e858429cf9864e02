// Command email-env serves the example inbox environment on
// $MCP_HOST:$MCP_PORT (default 0.0.0.0:18765) until SIGTERM.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentenv/agentenv/examples/envs/email"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	s, _ := email.New(nil)
	if err := s.Run(ctx); err != nil {
		slog.Error("email-env", "err", err)
		os.Exit(1)
	}
}
