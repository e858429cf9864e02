// Command notes-agent is the tutorial's agent: it keeps whatever it is
// told to remember as a note in every environment it was given, and says
// how many notes there are. It uses no model, so its runs are
// deterministic; a real agent would let a model choose the tool calls.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentenv/agentenv/agentsdk"
)

func remember(ctx context.Context, t *agentsdk.Task) (*agentsdk.Result, error) {
	note := strings.TrimSpace(strings.TrimPrefix(t.Text(), "Remember:"))
	args, err := json.Marshal(map[string]string{"text": note})
	if err != nil {
		return nil, err
	}
	// The runner registers each environment of the task through
	// mcp-config; MCPServers holds them under names of its choosing.
	var replies []string
	for name := range t.MCPServers {
		mcp, err := t.MCP(ctx, name)
		if err != nil {
			return nil, agentsdk.InfraFail("mcp_unavailable", err.Error())
		}
		tools, err := mcp.ListTools(ctx)
		if err != nil {
			return nil, agentsdk.InfraFail("mcp_unavailable", err.Error())
		}
		for _, tool := range tools {
			if !strings.HasSuffix(tool.Name, "_add") {
				continue
			}
			res, err := mcp.CallTool(ctx, tool.Name, args)
			if err != nil {
				return nil, agentsdk.InfraFail("tool_call_failed", err.Error())
			}
			// The trajectory is what the agent did, for people and
			// verifiers to read after the run.
			if err := t.Trajectory.Append(map[string]any{"type": "tool_call", "tool": tool.Name, "result": res.Text}); err != nil {
				return nil, err
			}
			if res.IsError {
				return nil, agentsdk.Fail("tool_error", res.Text)
			}
			replies = append(replies, fmt.Sprintf("Noted with %s: %s", tool.Name, res.Text))
		}
	}
	if len(replies) == 0 {
		return nil, agentsdk.Fail("no_env", "I was given no environment to keep notes in.")
	}
	return agentsdk.Text(strings.Join(replies, "\n")), nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := agentsdk.New(&agentsdk.Card{Name: "notes-agent", Description: "Keeps notes.", Version: "1.0.0"},
		&agentsdk.Options{Agent: agentsdk.Handler(remember)})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.ListenAndServe(ctx); err != nil {
		log.Fatal(err)
	}
}
