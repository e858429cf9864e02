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
	"github.com/agentenv/agentenv/protocol"
)

type notesEnv struct {
	mu    sync.Mutex
	notes []string
	URL   string
}

func startNotesEnv(t testing.TB) *notesEnv {
	e := &notesEnv{}
	s := server.NewMCPServer("notes", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("add_note", mcp.WithString("text", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text, err := req.RequireString("text")
			if err != nil {
				return mcp.NewToolResultError("text is required"), nil
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			e.notes = append(e.notes, text)
			return mcp.NewToolResultText("note " + text + " saved by " + req.Header.Get(protocol.HeaderRole)), nil
		})
	hs := httptest.NewServer(server.NewStreamableHTTPServer(s, server.WithDisableLocalhostProtection(true)))
	t.Cleanup(hs.Close)
	e.URL = hs.URL + "/mcp"
	return e
}

const testScript = `{"rules":[
 {"when":{"contains":"readme"},"steps":[{"tool":"add_note","arguments":{"text":"readme"}}],"reply":"Done: {{result 0}}"},
 {"when":{"regex":"^fail"},"fail":{"code":"scripted_failure","message":"Asked to fail"}},
 {"when":{"equals":"json"},"reply":"here","structured_output":{"done":true}}],
 "default":{"reply":"No rule for: {{prompt}}"}}`

func startScripted(t testing.TB, agent *Agent) *agentsdktest.Agent {
	return agentsdktest.Start(t, Card(), &agentsdk.Options{Agent: agent, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func ctx30(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestScriptedAgentEndToEnd(t *testing.T) {
	env := startNotesEnv(t)
	a := startScripted(t, &Agent{})
	ctx := ctx30(t)
	if task, _ := a.Client.Prompt(ctx, "c", "hi"); task.Status.State != "failed" || task.Trailer().ErrorCode != "no_script" {
		t.Fatalf("without script: %+v", task)
	}
	if st, body, _ := a.Client.Ext(ctx, "POST", protocol.AgentMCPConfigPath, map[string]any{"url": env.URL, "name": "notes"}); st != 200 {
		t.Fatalf("mcp-config: %d %s", st, body)
	}
	if st, body, _ := a.Client.Ext(ctx, "POST", protocol.AgentConfigPath, `{"role":"writer","script":`+testScript+`}`); st != 200 {
		t.Fatalf("agent-config: %d %s", st, body)
	}
	task, err := a.Client.Prompt(ctx, "c", "please add readme")
	if err != nil || task.Status.State != "completed" || task.Text() != "Done: note readme saved by writer" {
		t.Fatalf("tool rule: %+v %v", task, err)
	}
	if tr := task.Trailer(); tr.Usage == nil || tr.Usage.ToolCallCount != 1 {
		t.Fatalf("usage = %+v", tr)
	}
	_, body, _ := a.Client.Ext(ctx, "POST", protocol.AgentTrajectoryPath, map[string]any{"task_id": task.ID})
	if !strings.Contains(string(body), `"type":"tool_call"`) || !strings.Contains(string(body), `"type":"tool_result"`) {
		t.Fatalf("trajectory = %s", body)
	}
	if task, _ := a.Client.Prompt(ctx, "c", "something else"); task.Text() != "No rule for: something else" {
		t.Fatalf("default: %+v", task)
	}
	task, _ = a.Client.Prompt(ctx, "c", "fail now")
	if tr := task.Trailer(); task.Status.State != "failed" || tr.ErrorCode != "scripted_failure" || task.Text() != "Asked to fail" {
		t.Fatalf("fail rule: %+v", task)
	}
	task, _ = a.Client.Prompt(ctx, "c", "json")
	parts := task.Status.Message.Parts
	if len(parts) != 2 || !strings.Contains(string(parts[1].Data), `"structured_output":{"done":true}`) {
		t.Fatalf("structured output: %+v", parts)
	}
	if len(env.notes) != 1 {
		t.Fatalf("notes = %v", env.notes)
	}
}

func TestInvalidScriptsRejected(t *testing.T) {
	a := startScripted(t, &Agent{})
	for _, s := range []string{
		`{"rules":[{"reply":"x","bogus":1}]}`,
		`{"rules":[{"when":{"regex":"("},"reply":"x"}]}`,
		`{"rules":[{"when":{"contains":"a","equals":"b"},"reply":"x"}]}`,
		`{"rules":[{"steps":[{"tool":""}],"reply":"x"}]}`,
		`{"rules":[{"reply":"{{result 0}}"}]}`,
		`{"rules":[{}]}`,
		`{"rules":[{"steps":[{"tool":"t","arguments":[1]}],"reply":"x"}]}`,
	} {
		st, body, _ := a.Client.Ext(ctx30(t), "POST", protocol.AgentConfigPath, `{"script":`+s+`}`)
		if st != 400 {
			t.Errorf("%s: %d %s", s, st, body)
		}
	}
}

func TestScriptFromEnvironment(t *testing.T) {
	t.Setenv("SCRIPTED_AGENT_SCRIPT", `{"default":{"reply":"env says {{prompt}}"}}`)
	agent, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	a := startScripted(t, agent)
	task, err := a.Client.Prompt(ctx30(t), "", "hello")
	if err != nil || task.Text() != "env says hello" {
		t.Fatalf("%+v %v", task, err)
	}
	t.Setenv("SCRIPTED_AGENT_SCRIPT", `{"nope":1}`)
	if _, err := FromEnv(); err == nil {
		t.Fatal("bad env script accepted")
	}
}

// BenchmarkScriptedPromptRoundTrip measures one runner-style prompt on
// loopback: message/send (non-blocking) then tasks/get until completed,
// with and without one MCP tool call.
func BenchmarkScriptedPromptRoundTrip(b *testing.B) {
	for _, c := range []struct {
		name   string
		script string
		tools  bool
	}{
		{"reply-only", `{"default":{"reply":"ok"}}`, false},
		{"one-tool-call", `{"default":{"steps":[{"tool":"add_note","arguments":{"text":"x"}}],"reply":"{{result 0}}"}}`, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			a := startScripted(b, &Agent{Default: json.RawMessage(c.script)})
			a.Client.PollInterval = 100 * time.Microsecond
			ctx := ctx30(b)
			if c.tools {
				env := startNotesEnv(b)
				if st, _, _ := a.Client.Ext(ctx, "POST", protocol.AgentMCPConfigPath, map[string]any{"url": env.URL}); st != 200 {
					b.Fatal(st)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				task, err := a.Client.Prompt(ctx, "bench", "go")
				if err != nil || task.Status.State != "completed" {
					b.Fatalf("%+v %v", task, err)
				}
			}
		})
	}
}
