// Command brokenenv is a deliberately flawed env for the release-gate
// tests: its tool has no description and its parameters lack
// descriptions (one a list without items), so verify_mcp_tool_schema
// must fail it. It serves on $MCP_HOST:$MCP_PORT like the examples.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/protocol"
)

type in struct {
	Query string `json:"query"`
	Tags  []any  `json:"tags,omitempty"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	s := envsdk.New(&protocol.EnvCard{Name: "broken"}, nil)
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_search"},
		func(context.Context, *envsdk.Request, in) (map[string]any, error) { return map[string]any{}, nil })
	if err := s.Run(ctx); err != nil {
		slog.Error("brokenenv", "err", err)
		os.Exit(1)
	}
}
