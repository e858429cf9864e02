package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

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
	// OutputFormat, when set, asks the model for JSON matching a schema
	// and returns the answer as structured_output. Either the schema itself
	// or {"type":"json_schema","schema":{…}}.
	OutputFormat json.RawMessage `json:"output_format,omitempty"`
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
	if _, err := c.outputSchema(); err != nil {
		return err
	}
	return nil
}

// outputSchema returns the JSON schema of output_format, nil when unset.
func (c *Config) outputSchema() (map[string]any, error) {
	if len(c.OutputFormat) == 0 || string(c.OutputFormat) == "null" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(c.OutputFormat, &m); err != nil {
		return nil, errors.New("output_format: must be a JSON schema object")
	}
	if m["type"] == "json_schema" {
		inner, ok := m["schema"].(map[string]any)
		if !ok {
			return nil, errors.New("output_format.schema: must be an object")
		}
		return inner, nil
	}
	return m, nil
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

// toolRef says what an exposed tool name calls: an MCP tool, or (peer
// set) a peer agent.
type toolRef struct{ server, tool, peer string }

// peerToolPrefix names the tools that message peer agents.
const peerToolPrefix = "peer__"

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
	schema, _ := cfg.outputSchema() // validated at set time
	params := openai.ChatCompletionNewParams{Tools: tools}
	if schema != nil {
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "output", Schema: schema}}}
	}
	var msgs []openai.ChatCompletionMessageParamUnion
	if cfg.SystemPrompt != "" {
		msgs = append(msgs, openai.SystemMessage(cfg.SystemPrompt))
	}
	msgs = append(msgs, openai.UserMessage(t.Text()))
	var usage protocol.Usage
	for turn := 1; turn <= cfg.MaxTurns; turn++ {
		_ = tlog.Append(map[string]any{"type": "model_call", "turn": turn, "model": cfg.Model, "messages": len(msgs), "tools": len(tools)})
		params.Messages = msgs
		resp, err := client.Complete(ctx, params)
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
			res := &agentsdk.Result{Parts: []protocol.Part{protocol.TextPart(msg.Content)}, Usage: usage}
			if schema != nil {
				var v any
				if err := json.Unmarshal([]byte(msg.Content), &v); err != nil {
					return nil, &agentsdk.Failure{Type: protocol.ErrorTypeAgent, Code: "invalid_structured_output",
						Message: "The model's answer is not the JSON that output_format asks for", Usage: usage}
				}
				res.StructuredOutput, _ = json.Marshal(v)
			}
			return res, nil
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
			refs[name] = toolRef{server: server, tool: tool.Name}
			exposed = append(exposed, name)
			all = append(all, tool)
		}
	}
	for _, p := range t.Peers {
		name := peerToolPrefix + toolToken(p.Name)
		if _, dup := refs[name]; dup {
			continue
		}
		refs[name] = toolRef{peer: p.Name}
		exposed = append(exposed, name)
		desc := "Send a message to the peer agent " + p.Name + " and get its answer."
		if p.Description != "" {
			desc += " " + p.Description
		}
		all = append(all, agentsdk.Tool{Name: name, Description: desc,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"what to ask the peer"}},"required":["message"]}`)})
	}
	defs, err := llm.OpenAITools(all, exposed)
	return defs, refs, err
}

// toolToken maps a peer name to the characters model APIs allow in names.
func toolToken(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
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
	if ref.peer != "" {
		var in struct {
			Message string `json:"message"`
		}
		if json.Unmarshal([]byte(args), &in) != nil || in.Message == "" {
			return result("Invalid tool arguments: message (a non-empty string) is required", true)
		}
		reply, err := t.AskPeer(ctx, ref.peer, t.ContextID, in.Message)
		if err != nil {
			return result("Peer "+ref.peer+" could not be reached", true)
		}
		if reply.State != "completed" {
			return result("Peer "+ref.peer+" ended "+reply.State+": "+reply.Text(), true)
		}
		return result(reply.Text(), false)
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
