package main

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/protocol"
)

// TrajectoryFormat names the events the scripted agent records.
const TrajectoryFormat = "agentenv-scripted/v1"

// Config is the scripted agent's agent-config.
type Config struct {
	Script json.RawMessage `json:"script,omitempty"`
}

// Validate parses the script so a bad one is refused at set time.
func (c *Config) Validate() error {
	if len(c.Script) == 0 || string(c.Script) == "null" {
		return nil
	}
	_, err := ParseScript(c.Script)
	return err
}

// Agent runs the configured script.
type Agent struct {
	// Default is the script used until agent-config sets one.
	Default json.RawMessage

	conv conversations // per-context turns, for snapshots
}

var (
	_ agentsdk.Agent        = (*Agent)(nil)
	_ agentsdk.Configurable = (*Agent)(nil)
)

// HostsTriggers turns on the agent-side triggers extension, so a scripted
// agent playing the user in a conversation can also answer turns
// deterministically through decide.
func (a *Agent) HostsTriggers() bool { return true }

// ConfigDefaults returns the startup script as the default.
func (a *Agent) ConfigDefaults() any { return &Config{Script: a.Default} }

// Run follows the first matching rule.
func (a *Agent) Run(ctx context.Context, t *agentsdk.Task) (*agentsdk.Result, error) {
	var cfg Config
	if err := t.Config(&cfg); err != nil {
		return nil, err
	}
	if len(cfg.Script) == 0 || string(cfg.Script) == "null" {
		return nil, agentsdk.Fail("no_script", "No script is configured (set agent-config script)")
	}
	script, err := ParseScript(cfg.Script)
	if err != nil {
		return nil, err
	}
	_ = t.Trajectory.SetFormat(TrajectoryFormat)
	prompt := t.Text()
	rule := script.match(prompt)
	if rule == nil {
		return nil, agentsdk.Fail("no_matching_rule", "The script has no rule for this prompt")
	}
	var usage protocol.Usage
	results := make([]string, len(rule.Steps))
	for i, st := range rule.Steps {
		if st.Peer != "" {
			msg := render(st.Message, prompt, results[:i])
			_ = t.Trajectory.Append(map[string]any{"type": "peer_call", "step": i, "peer": st.Peer, "message": msg})
			reply, err := t.AskPeer(ctx, st.Peer, "", msg)
			if err != nil {
				return nil, agentsdk.Fail("peer_call_failed", "A scripted peer call failed")
			}
			results[i] = reply.Text()
			_ = t.Trajectory.Append(map[string]any{"type": "peer_result", "step": i, "peer": st.Peer, "state": reply.State, "text": results[i]})
			continue
		}
		server, err := resolveServer(ctx, t, st)
		if err != nil {
			return nil, err
		}
		_ = t.Trajectory.Append(map[string]any{"type": "tool_call", "step": i, "server": server, "name": st.Tool, "arguments": st.Arguments})
		sess, err := t.MCP(ctx, server)
		if err != nil {
			return nil, agentsdk.InfraFail("mcp_unavailable", "An MCP server of the environment could not be reached")
		}
		res, err := sess.CallTool(ctx, st.Tool, st.Arguments)
		if err != nil {
			return nil, agentsdk.InfraFail("tool_call_failed", "A scripted tool call failed")
		}
		usage.ToolCallCount++
		results[i] = res.Text
		_ = t.Trajectory.Append(map[string]any{"type": "tool_result", "step": i, "name": st.Tool, "is_error": res.IsError, "text": res.Text})
	}
	if rule.Fail != nil {
		a.conv.add(t.ContextID, Turn{Prompt: prompt, Error: rule.Fail.Code})
		_ = t.Trajectory.Append(map[string]any{"type": "final", "error_code": rule.Fail.Code})
		return nil, &agentsdk.Failure{Type: protocol.ErrorTypeAgent, Code: rule.Fail.Code, Message: rule.Fail.Message, Usage: usage}
	}
	res := &agentsdk.Result{Usage: usage, StructuredOutput: rule.StructuredOutput}
	var text string
	if rule.Reply != "" {
		text = render(rule.Reply, prompt, results)
		res.Parts = []protocol.Part{protocol.TextPart(text)}
		_ = t.Trajectory.Append(map[string]any{"type": "final", "text": text})
	}
	a.conv.add(t.ContextID, Turn{Prompt: prompt, Reply: text})
	return res, nil
}

// resolveServer picks the step's MCP server.
func resolveServer(ctx context.Context, t *agentsdk.Task, st Step) (string, error) {
	if st.Server != "" {
		if _, ok := t.MCPServers[st.Server]; !ok {
			return "", agentsdk.Fail("unknown_server", "The script names an MCP server that is not registered")
		}
		return st.Server, nil
	}
	names := make([]string, 0, len(t.MCPServers))
	for n := range t.MCPServers {
		names = append(names, n)
	}
	slices.Sort(names)
	switch len(names) {
	case 0:
		return "", agentsdk.Fail("no_mcp_server", "The script calls a tool but no MCP server is registered")
	case 1:
		return names[0], nil
	}
	for _, n := range names {
		sess, err := t.MCP(ctx, n)
		if err != nil {
			continue
		}
		tools, err := sess.ListTools(ctx)
		if err != nil {
			continue
		}
		if slices.ContainsFunc(tools, func(x agentsdk.Tool) bool { return x.Name == st.Tool }) {
			return n, nil
		}
	}
	return "", agentsdk.Fail("unknown_tool", "No registered MCP server offers the scripted tool")
}
