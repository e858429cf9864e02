// Command scripted is a deterministic AgentEnv agent driven by a small
// JSON script instead of a model: which MCP tools to call with which
// arguments and what to reply, optionally chosen by the prompt text. It
// lets tasks and tests run end to end with no model.
//
// The script comes from agent-config ({"script": {...}}), or at startup
// from $SCRIPTED_AGENT_SCRIPT (JSON text) or $SCRIPTED_AGENT_SCRIPT_FILE.
//
//	{"rules": [
//	  {"when": {"contains": "readme"},
//	   "steps": [{"tool": "add_item", "arguments": {"name": "readme"}}],
//	   "reply": "Added readme ({{result 0}})."}],
//	 "default": {"reply": "Nothing to do for: {{prompt}}"}}
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
	agent, err := FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	srv, err := agentsdk.New(Card(), &agentsdk.Options{Agent: agent, Logger: logger})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger.Info("scripted agent listening", slog.String("addr", srv.Addr()))
	if err := srv.ListenAndServe(ctx); err != nil {
		logger.Error("serve", slog.Any("error", err))
		os.Exit(1)
	}
}

// Card is the scripted agent's identity.
func Card() *agentsdk.Card {
	return &agentsdk.Card{Name: "scripted", Description: "Deterministic agent that follows a JSON script.", Version: "0.1.0"}
}
