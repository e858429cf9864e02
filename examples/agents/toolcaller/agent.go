package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/llm"
	"github.com/agentenv/agentenv/protocol"
)

// TrajectoryFormat names the events the toolcaller records.
const TrajectoryFormat = "agentenv-toolcaller/v1"

// Config is the toolcaller's agent-config.
type Config struct {
	Model        string `json:"model"`
	SystemPrompt string `json:"system_prompt,omitempty"`
	// BaseURL and APIKey override LITELLM_BASE_URL / LITELLM_API_KEY.
	BaseURL             string `json:"base_url,omitempty"`
	APIKey              string `json:"api_key,omitempty" agentenv:"writeonly"`
	MaxTurns            int    `json:"max_turns"`
	MaxRetries          int    `json:"max_retries"`
	ModelTimeoutSeconds int    `json:"model_timeout_seconds"`
}

// Validate bounds the numeric settings.
func (c *Config) Validate() error {
	switch {
	case c.MaxTurns < 1 || c.MaxTurns > 200:
		return errors.New("max_turns: must be from 1 to 200")
	case c.MaxRetries < 0 || c.MaxRetries > 10:
		return errors.New("max_retries: must be from 0 to 10")
	case c.ModelTimeoutSeconds < 1 || c.ModelTimeoutSeconds > 3600:
		return errors.New("model_timeout_seconds: must be from 1 to 3600")
	}
	return nil
}

// Agent is the toolcaller.
type Agent struct{}

var (
	_ agentsdk.Agent        = (*Agent)(nil)
	_ agentsdk.Configurable = (*Agent)(nil)
)

// ConfigDefaults are the defaults of Config.
func (*Agent) ConfigDefaults() any {
	return &Config{Model: "gpt-4o-mini", MaxTurns: 20, MaxRetries: 2, ModelTimeoutSeconds: 120}
}

type toolRef struct{ server, tool string }

// Run drives the model <-> tools loop.
func (*Agent) Run(ctx context.Context, t *agentsdk.Task) (*agentsdk.Result, error) {
	var cfg Config
	if err := t.Config(&cfg); err != nil {
		return nil, err
	}
	tlog := t.Trajectory
	if err := tlog.SetFormat(TrajectoryFormat); err != nil {
		return nil, err
	}
	client, err := llm.New(llm.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model,
		MaxRetries: cfg.MaxRetries, Timeout: time.Duration(cfg.ModelTimeoutSeconds) * time.Second})
	if err != nil {
		return nil, err
	}
	tools, refs, err := collectTools(ctx, t)
	if err != nil {
		return nil, err
	}
	var msgs []openai.ChatCompletionMessageParamUnion
	if cfg.SystemPrompt != "" {
		msgs = append(msgs, openai.SystemMessage(cfg.SystemPrompt))
	}
	msgs = append(msgs, openai.UserMessage(t.Text()))
	var usage protocol.Usage
	for turn := 1; turn <= cfg.MaxTurns; turn++ {
		_ = tlog.Append(map[string]any{"type": "model_call", "turn": turn, "model": cfg.Model, "messages": len(msgs), "tools": len(tools)})
		resp, err := client.Complete(ctx, openai.ChatCompletionNewParams{Messages: msgs, Tools: tools})
		if err != nil {
			var f *agentsdk.Failure
			if errors.As(err, &f) {
				_ = tlog.Append(map[string]any{"type": "model_error", "turn": turn, "error_code": f.Code})
				f.Usage = usage
			}
			return nil, err
		}
		usage.InputTokens += resp.Usage.PromptTokens
		usage.OutputTokens += resp.Usage.CompletionTokens
		usage.TotalTokens += resp.Usage.TotalTokens
		msg := resp.Choices[0].Message
		calls := make([]map[string]any, 0, len(msg.ToolCalls))
		for _, c := range msg.ToolCalls {
			calls = append(calls, map[string]any{"id": c.ID, "name": c.Function.Name, "arguments": c.Function.Arguments})
		}
		_ = tlog.Append(map[string]any{"type": "model_response", "turn": turn, "content": msg.Content, "tool_calls": calls,
			"usage": map[string]int64{"input_tokens": resp.Usage.PromptTokens, "output_tokens": resp.Usage.CompletionTokens}})
		if len(msg.ToolCalls) == 0 {
			if msg.Content == "" {
				return nil, &agentsdk.Failure{Type: protocol.ErrorTypeAgent, Code: "empty_answer", Message: "The model answered with no text", Usage: usage}
			}
			_ = tlog.Append(map[string]any{"type": "final", "turn": turn, "text": msg.Content})
			return &agentsdk.Result{Parts: []protocol.Part{protocol.TextPart(msg.Content)}, Usage: usage}, nil
		}
		msgs = append(msgs, msg.ToParam())
		for _, c := range msg.ToolCalls {
			usage.ToolCallCount++
			text := callTool(ctx, t, refs, c.ID, c.Function.Name, c.Function.Arguments)
			msgs = append(msgs, openai.ToolMessage(text, c.ID))
		}
	}
	return nil, &agentsdk.Failure{Type: protocol.ErrorTypeAgent, Code: "max_turns_exceeded",
		Message: fmt.Sprintf("The agent reached its limit of %d model turns", cfg.MaxTurns), Usage: usage}
}

// collectTools lists the tools of every registered MCP server. With one
// server tools keep their names; with several they are named
// mcp__<server>__<tool>.
func collectTools(ctx context.Context, t *agentsdk.Task) ([]openai.ChatCompletionToolUnionParam, map[string]toolRef, error) {
	names := make([]string, 0, len(t.MCPServers))
	for n := range t.MCPServers {
		names = append(names, n)
	}
	slices.Sort(names)
	var all []agentsdk.Tool
	var exposed []string
	refs := map[string]toolRef{}
	for _, server := range names {
		sess, err := t.MCP(ctx, server)
		if err != nil {
			return nil, nil, agentsdk.InfraFail("mcp_unavailable", "An MCP server of the environment could not be reached")
		}
		tools, err := sess.ListTools(ctx)
		if err != nil {
			return nil, nil, agentsdk.InfraFail("mcp_unavailable", "An MCP server of the environment could not list its tools")
		}
		for _, tool := range tools {
			name := tool.Name
			if len(names) > 1 {
				name = agentsdk.QualifiedToolName(server, tool.Name)
			}
			refs[name] = toolRef{server, tool.Name}
			exposed = append(exposed, name)
			all = append(all, tool)
		}
	}
	defs, err := llm.OpenAITools(all, exposed)
	return defs, refs, err
}

// callTool runs one tool call and returns the text the model sees. Tool
// failures are answers for the model, not task failures.
func callTool(ctx context.Context, t *agentsdk.Task, refs map[string]toolRef, id, name, args string) string {
	tlog := t.Trajectory
	ref, ok := refs[name]
	_ = tlog.Append(map[string]any{"type": "tool_call", "id": id, "name": name, "server": ref.server, "arguments": args})
	result := func(text string, isError bool) string {
		_ = tlog.Append(map[string]any{"type": "tool_result", "id": id, "name": name, "is_error": isError, "text": text})
		return text
	}
	if !ok {
		return result("Unknown tool: "+name, true)
	}
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return result("Invalid tool arguments: not valid JSON", true)
	}
	sess, err := t.MCP(ctx, ref.server)
	if err != nil {
		return result("Tool server unavailable", true)
	}
	res, err := sess.CallTool(ctx, ref.tool, json.RawMessage(args))
	if err != nil {
		return result("Tool call failed: "+err.Error(), true)
	}
	return result(res.Text, res.IsError)
}
