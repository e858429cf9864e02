package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/internal/fakemodel"
	"github.com/agentenv/agentenv/protocol"
)

func TestOutputFormatReturnsStructuredOutput(t *testing.T) {
	format := map[string]any{"type": "json_schema", "schema": map[string]any{"type": "object",
		"properties": map[string]any{"message": map[string]any{"type": "string"}, "done": map[string]any{"type": "boolean"}}}}
	model := fakemodel.New([]fakemodel.Reply{{Text: `{"message":"hi","done":true}`}, {Text: "not json"}}, nil)
	defer model.Close()
	a := startAgent(t, model, nil, map[string]any{"output_format": format})
	task := prompt(t, a, "answer as JSON")
	parts := task.Status.Message.Parts
	if task.Status.State != "completed" || len(parts) < 2 || !strings.Contains(string(parts[1].Data), `"structured_output":{"done":true,"message":"hi"}`) {
		t.Fatalf("task = %+v", task)
	}
	var body struct {
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string         `json:"name"`
				Schema map[string]any `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	_ = json.Unmarshal(model.Requests()[0].Body, &body)
	if body.ResponseFormat.Type != "json_schema" || body.ResponseFormat.JSONSchema.Schema["type"] != "object" {
		t.Fatalf("response_format = %+v", body.ResponseFormat)
	}
	task = prompt(t, a, "again")
	if tr := task.Trailer(); task.Status.State != "failed" || tr.ErrorCode != "invalid_structured_output" {
		t.Fatalf("non-JSON answer: %+v", tr)
	}
	for _, bad := range []any{[]int{1}, map[string]any{"type": "json_schema", "schema": "x"}} {
		if st, _, _ := a.Client.Ext(context.Background(), "POST", protocol.AgentConfigPath, map[string]any{"output_format": bad}); st != 400 {
			t.Errorf("output_format %v: %d", bad, st)
		}
	}
}

func TestPeersAreTools(t *testing.T) {
	peer := agentsdktest.Start(t, &agentsdk.Card{Name: "helper"}, &agentsdk.Options{
		Agent: agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
			return agentsdk.Text("helper answers " + tk.Text()), nil
		})})
	model := fakemodel.New([]fakemodel.Reply{
		{ToolCalls: []fakemodel.ToolCall{{Name: "peer__help_er", Arguments: `{"message":"what is 2+2"}`}}},
		{Text: "The helper says 4."},
	}, nil)
	defer model.Close()
	a := startAgent(t, model, nil, nil)
	set := map[string]any{"peers": []any{map[string]any{"name": "help.er", "url": peer.URL, "description": "Knows sums."}}}
	if st, body, _ := a.Client.Ext(context.Background(), "POST", protocol.AgentPeerAgentsPath, set); st != 200 {
		t.Fatalf("peers: %d %s", st, body)
	}
	task := prompt(t, a, "ask the helper")
	if task.Status.State != "completed" || task.Text() != "The helper says 4." {
		t.Fatalf("task = %+v", task)
	}
	reqs := model.Requests()
	if got := strings.Join(reqs[0].ToolNames(), ","); got != "peer__help_er" {
		t.Fatalf("tools = %s", got)
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "tool" || last.Content != "helper answers what is 2+2" {
		t.Fatalf("peer answer fed back = %+v", last)
	}
}
