package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/internal/fakemodel"
	"github.com/agentenv/agentenv/protocol"
)

// itemsEnv is a tiny MCP environment (add_item, list_items) on loopback
// that records the role header of every call.
type itemsEnv struct {
	mu    sync.Mutex
	items []string
	roles []string
	URL   string
}

func startItemsEnv(t *testing.T) *itemsEnv {
	e := &itemsEnv{}
	s := server.NewMCPServer("items", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("add_item", mcp.WithDescription("Add an item"), mcp.WithString("name", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, err := req.RequireString("name")
			if err != nil {
				return mcp.NewToolResultError("name is required"), nil
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			e.roles = append(e.roles, req.Header.Get(protocol.HeaderRole))
			e.items = append(e.items, name)
			return mcp.NewToolResultText("added " + name), nil
		})
	s.AddTool(mcp.NewTool("list_items", mcp.WithDescription("List items")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.roles = append(e.roles, req.Header.Get(protocol.HeaderRole))
			return mcp.NewToolResultText(strings.Join(e.items, ",")), nil
		})
	h := server.NewStreamableHTTPServer(s,
		server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326),
		server.WithDisableLocalhostProtection(true))
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	e.URL = hs.URL + "/mcp"
	return e
}

func startAgent(t *testing.T, model *fakemodel.Server, env *itemsEnv, extra map[string]any) *agentsdktest.Agent {
	t.Setenv("LITELLM_BASE_URL", "")
	t.Setenv("LITELLM_API_KEY", "")
	a := agentsdktest.Start(t, Card(), &agentsdk.Options{Agent: &Agent{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx := context.Background()
	if env != nil {
		if st, body, err := a.Client.Ext(ctx, "POST", protocol.AgentMCPConfigPath, map[string]any{"url": env.URL, "name": "items"}); err != nil || st != 200 {
			t.Fatalf("mcp-config: %d %s %v", st, body, err)
		}
	}
	cfg := map[string]any{"role": "solver", "max_retries": 0, "model": "fake-1"}
	if model != nil {
		cfg["base_url"], cfg["api_key"] = model.URL(), "sk-test"
	}
	for k, v := range extra {
		cfg[k] = v
	}
	if st, body, err := a.Client.Ext(ctx, "POST", protocol.AgentConfigPath, cfg); err != nil || st != 200 {
		t.Fatalf("agent-config: %d %s %v", st, body, err)
	}
	return a
}

func prompt(t *testing.T, a *agentsdktest.Agent, text string) *agentsdktest.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	task, err := a.Client.Prompt(ctx, "conv-1", text)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func TestMultiStepToolTask(t *testing.T) {
	env := startItemsEnv(t)
	model := fakemodel.New([]fakemodel.Reply{
		{ToolCalls: []fakemodel.ToolCall{{Name: "add_item", Arguments: `{"name":"readme"}`}}},
		{ToolCalls: []fakemodel.ToolCall{{Name: "list_items"}, {Name: "nope"}}},
		{Text: "Added readme.", Usage: &fakemodel.Usage{PromptTokens: 20, CompletionTokens: 4}},
	}, &fakemodel.Options{APIKey: "sk-test"})
	defer model.Close()
	a := startAgent(t, model, env, map[string]any{"system_prompt": "You manage items."})
	task := prompt(t, a, "Add an item named readme")
	if task.Status.State != "completed" || task.Text() != "Added readme." {
		t.Fatalf("task = %+v", task)
	}
	tr := task.Trailer()
	if tr.Usage == nil || tr.Usage.ToolCallCount != 3 || tr.Usage.InputTokens != 40 || tr.Usage.OutputTokens != 14 || tr.Usage.TotalTokens != 54 {
		t.Fatalf("usage = %+v", tr.Usage)
	}
	if strings.Join(env.items, ",") != "readme" || strings.Join(env.roles, ",") != "solver,solver" {
		t.Fatalf("env items %v roles %v", env.items, env.roles)
	}
	reqs := model.Requests()
	if len(reqs) != 3 || reqs[0].Model != "fake-1" || reqs[0].Header.Get("Authorization") != "Bearer sk-test" {
		t.Fatalf("model requests = %d", len(reqs))
	}
	if got := strings.Join(reqs[0].ToolNames(), ","); got != "add_item,list_items" {
		t.Fatalf("tools = %s", got)
	}
	if m := reqs[0].Messages; len(m) != 2 || m[0].Role != "system" || m[1].Content != "Add an item named readme" {
		t.Fatalf("first request messages = %+v", m)
	}
	last := reqs[2].Messages
	if n := len(last); last[n-2].Content != "readme" || last[n-1].Content != "Unknown tool: nope" {
		t.Fatalf("tool results fed back = %+v", last)
	}
	st, body, err := a.Client.Ext(context.Background(), "POST", protocol.AgentTrajectoryPath, map[string]any{"task_id": task.ID})
	if err != nil || st != 200 {
		t.Fatalf("trajectory: %d %s %v", st, body, err)
	}
	var traj struct{ Trajectory []map[string]any }
	if err := json.Unmarshal(body, &traj); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range traj.Trajectory {
		types = append(types, ev["type"].(string))
	}
	want := "model_call,model_response,tool_call,tool_result,model_call,model_response,tool_call,tool_result,tool_call,tool_result,model_call,model_response,final"
	if strings.Join(types, ",") != want {
		t.Fatalf("trajectory = %v", types)
	}
	if traj.Trajectory[3]["text"] != "added readme" || traj.Trajectory[2]["arguments"] != `{"name":"readme"}` {
		t.Fatalf("tool events = %v %v", traj.Trajectory[2], traj.Trajectory[3])
	}
	if strings.Contains(string(body), "sk-test") {
		t.Fatal("api key in trajectory")
	}
}

func TestModelFailuresEndTheTask(t *testing.T) {
	cases := []struct {
		name  string
		reply fakemodel.Reply
		extra map[string]any
		code  string
	}{
		{"server error", fakemodel.Reply{Status: 500}, nil, "provider_error"},
		{"rate limited", fakemodel.Reply{Status: 429}, nil, "provider_rate_limited"},
		{"timeout", fakemodel.Reply{Hang: true}, map[string]any{"model_timeout_seconds": 1}, "provider_timeout"},
		{"turn limit", fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{Name: "list_items"}}}, map[string]any{"max_turns": 1}, "max_turns_exceeded"},
	}
	env := startItemsEnv(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			model := fakemodel.New([]fakemodel.Reply{c.reply}, &fakemodel.Options{APIKey: "sk-test"})
			defer model.Close()
			a := startAgent(t, model, env, c.extra)
			task := prompt(t, a, "do it")
			tr := task.Trailer()
			if task.Status.State != "failed" || tr.ErrorCode != c.code || tr.ErrorType != "agent_error" {
				t.Fatalf("task = %s %+v", task.Status.State, tr)
			}
		})
	}
}

func TestNoModelEndpointConfigured(t *testing.T) {
	a := startAgent(t, nil, nil, nil)
	task := prompt(t, a, "hi")
	if tr := task.Trailer(); task.Status.State != "failed" || tr.ErrorCode != "model_endpoint_missing" || tr.ErrorType != "infra_error" {
		t.Fatalf("task = %+v", tr)
	}
}

func TestInvalidConfigRejected(t *testing.T) {
	a := startAgent(t, nil, nil, nil)
	for _, body := range []map[string]any{{"max_turns": 0}, {"max_turns": "3"}, {"api_key": 3}, {"temperature": 0.1}} {
		st, resp, err := a.Client.Ext(context.Background(), "POST", protocol.AgentConfigPath, body)
		if err != nil || st != 400 || len(resp) == 0 {
			t.Errorf("%v: %d %s", body, st, resp)
		}
	}
	_, resp, _ := a.Client.Ext(context.Background(), "GET", protocol.AgentConfigPath, nil)
	if !strings.Contains(string(resp), `"role":"solver"`) {
		t.Fatalf("config = %s", resp)
	}
}
