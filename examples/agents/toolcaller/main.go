// Command toolcaller is the default AgentEnv agent (a2a-default): a model
// <-> MCP tools loop. Each prompt goes to an OpenAI-compatible model
// (agent-config base_url/api_key, else LITELLM_BASE_URL/LITELLM_API_KEY)
// with the tools of every MCP server registered through mcp-config; tool
// calls are executed and fed back until the model answers with text or
// the turn limit is hit. Every model call, tool call and tool result is
// recorded in the task's trajectory.
//
// Build a static binary: CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" ./examples/agents/toolcaller
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentenv/agentenv/agentsdk"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	srv, err := agentsdk.New(Card(), &agentsdk.Options{Agent: &Agent{}, Logger: logger})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger.Info("toolcaller listening", slog.String("addr", srv.Addr()))
	if err := srv.ListenAndServe(ctx); err != nil {
		logger.Error("serve", slog.Any("error", err))
		os.Exit(1)
	}
}

// Card is the toolcaller's identity.
func Card() *agentsdk.Card {
	return &agentsdk.Card{Name: "a2a-default", Description: "Default tool-calling agent: a model driving the environment's MCP tools.", Version: "0.1.0"}
}
