package agentsdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/protocol"
)

// exampleEnv serves a one-tool environment (echo) on loopback and returns
// its MCP URL and a stop function.
func exampleEnv() (string, func()) {
	s := envsdk.New(&protocol.EnvCard{Name: "echo"}, &envsdk.Options{Logger: quiet()})
	type in struct {
		Text string `json:"text"`
	}
	envsdk.AddTool(s, &envsdk.Tool{Name: "echo", Description: "Echo the text."},
		func(ctx context.Context, _ *envsdk.Request, in in) (map[string]string, error) {
			return map[string]string{"echo": in.Text}, nil
		})
	h, err := s.Handler()
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(h)
	return hs.URL + "/mcp", hs.Close
}

// exampleAgent serves h as an agent on loopback and returns a client of
// it and a stop function.
func exampleAgent(h agentsdk.Handler) (*agentsdktest.Client, func()) {
	srv, err := agentsdk.New(&agentsdk.Card{Name: "example", Description: "An example", Version: "1.0.0"},
		&agentsdk.Options{Agent: h, Logger: quiet()})
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(srv)
	return &agentsdktest.Client{BaseURL: hs.URL, HTTP: hs.Client()}, func() { hs.Close(); _ = srv.Close() }
}

// MCPServers holds the MCP servers the runner registered through the
// mcp-config extension (one per environment of the task), by name. The
// names are the runner's choice: an agent iterates over them, or looks a
// tool up by listing each server's tools.
func ExampleTask_mcpServers() {
	mcpURL, stopEnv := exampleEnv()
	defer stopEnv()
	agent, stopAgent := exampleAgent(func(ctx context.Context, t *agentsdk.Task) (*agentsdk.Result, error) {
		var names []string
		for name, srv := range t.MCPServers {
			names = append(names, fmt.Sprintf("%s (headers: %d)", name, len(srv.Headers)))
		}
		sort.Strings(names)
		return agentsdk.Text(fmt.Sprint(names)), nil
	})
	defer stopAgent()

	// What the runner's deploy_agent step does for each environment.
	ctx := context.Background()
	status, _, err := agent.Ext(ctx, http.MethodPost, protocol.AgentMCPConfigPath,
		map[string]any{"name": "notes", "url": mcpURL, "headers": map[string]string{"Authorization": "Bearer role-token"}})
	if err != nil || status != http.StatusOK {
		fmt.Println("mcp-config add:", status, err)
		return
	}
	task, err := agent.Prompt(ctx, "conversation-1", "which servers?")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(task.Text())
	// Output: [notes (headers: 1)]
}

// CallTool calls one tool of a registered server. A tool that fails is a
// result with IsError set (the model should see it), not an error; err is
// for transport and protocol failures.
func ExampleMCPSession_CallTool() {
	mcpURL, stopEnv := exampleEnv()
	defer stopEnv()
	agent, stopAgent := exampleAgent(func(ctx context.Context, t *agentsdk.Task) (*agentsdk.Result, error) {
		mcp, err := t.MCP(ctx, "tools")
		if err != nil {
			return nil, err
		}
		args, _ := json.Marshal(map[string]string{"text": t.Text()})
		res, err := mcp.CallTool(ctx, "echo", args)
		if err != nil {
			return nil, err
		}
		bad, err := mcp.CallTool(ctx, "no_such_tool", nil)
		if err != nil {
			return nil, err
		}
		return agentsdk.Text(fmt.Sprintf("%s | %v %s", res.Text, bad.IsError, bad.Text)), nil
	})
	defer stopAgent()

	ctx := context.Background()
	if status, _, err := agent.Ext(ctx, http.MethodPost, protocol.AgentMCPConfigPath,
		map[string]any{"name": "tools", "url": mcpURL}); err != nil || status != http.StatusOK {
		fmt.Println("mcp-config add:", status, err)
		return
	}
	task, err := agent.Prompt(ctx, "conversation-1", "hello")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(task.Text())
	// Output: {"echo":"hello"} | true Unknown tool: no_such_tool
}
