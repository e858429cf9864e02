package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/protocol"
)

// EpisodeTrajectoryFormat names the trajectory events recorded for a
// trainer agent: the scripted agent's shapes (tool_call, tool_result,
// final), so verifiers read both alike.
const EpisodeTrajectoryFormat = "agentenv-episode/v1"

// ErrTurnEnded is returned when a turn is ended twice, or a tool is called
// after the turn ended.
var ErrTurnEnded = errors.New("turn already ended")

// ErrTurnTimedOut is returned by End (and Tools calls) after the turn's
// deadline: the turn failed with error code turn_timeout.
var ErrTurnTimedOut = errors.New("turn deadline passed")

// Turn is one prompt to a trainer agent: the trainer answers it with End.
type Turn struct {
	// ID is unique within the episode ("t1", "t2", …).
	ID string
	// AgentName is the trainer agent prompted.
	AgentName string
	// PromptID and StepID name the prompt_agent step that asked ("" for
	// prompts no prompt step sent, such as trigger executors; PromptID is
	// also "" when the step's prompt_id is minted at run time).
	PromptID, StepID string
	// SystemPrompt is the agent-config system_prompt set so far.
	SystemPrompt string
	// Prompt is the text of the user message; Parts is the whole message.
	Prompt string
	Parts  []protocol.Part
	// Role is the agent's configured role ("" when none); Tools sends it.
	Role string
	// Config holds every agent-config value set so far, by wire name.
	Config map[string]json.RawMessage
	// MCPServers are the env MCP servers registered for the agent.
	MCPServers map[string]agentsdk.MCPServer
	// TaskID and ContextID are the A2A ids of the prompt.
	TaskID, ContextID string
	// Deadline is when the turn times out.
	Deadline time.Time

	ep      *Episode
	task    *agentsdk.Task
	timeout time.Duration
	reply   chan string

	mu       sync.Mutex
	state    turnState
	calls    int
	toolsErr error
}

type turnState int

const (
	turnOpen turnState = iota
	turnEnded
	turnTimedOut
	turnCancelled
)

// End answers the turn with response. It fails with ErrTurnEnded when the
// turn already ended and with ErrTurnTimedOut after the deadline (the
// episode then reports the turn in TimedOutTurns).
func (t *Turn) End(_ context.Context, response string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.openLocked(); err != nil {
		return err
	}
	t.state = turnEnded
	t.reply <- response // buffered 1; written once
	return nil
}

// openLocked reports why the turn is no longer open.
func (t *Turn) openLocked() error {
	switch t.state {
	case turnEnded:
		return fmt.Errorf("turn %s: %w", t.ID, ErrTurnEnded)
	case turnTimedOut:
		return fmt.Errorf("turn %s: %w (deadline %s)", t.ID, ErrTurnTimedOut, t.Deadline.UTC().Format(time.RFC3339))
	case turnCancelled:
		return fmt.Errorf("turn %s: the run cancelled it: %w", t.ID, ErrTurnEnded)
	}
	if !time.Now().Before(t.Deadline) {
		return fmt.Errorf("turn %s: %w (deadline %s)", t.ID, ErrTurnTimedOut, t.Deadline.UTC().Format(time.RFC3339))
	}
	return nil
}

// finish moves an open turn to state; it reports whether it did.
func (t *Turn) finish(state turnState) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != turnOpen {
		return false
	}
	t.state = state
	return true
}

// ToolCalls is how many tools the trainer called through Tools so far.
func (t *Turn) ToolCalls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls
}

// Tools opens MCP sessions on the agent's env servers, sending the
// agent's role. Every call is recorded in the agent's trajectory and
// counted in the turn's tool_call_count.
func (t *Turn) Tools(ctx context.Context) (*TurnTools, error) {
	t.mu.Lock()
	err := t.openLocked()
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	tt := &TurnTools{turn: t, sessions: map[string]*agentsdk.MCPSession{}}
	for name := range t.MCPServers {
		sess, err := t.task.MCP(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("turn %s: %w", t.ID, err)
		}
		tt.sessions[name] = sess
	}
	return tt, nil
}

// TurnTools is a turn's MCP sessions, one per env server.
type TurnTools struct {
	turn     *Turn
	sessions map[string]*agentsdk.MCPSession
}

// Servers lists the MCP server names, sorted.
func (tt *TurnTools) Servers() []string {
	out := make([]string, 0, len(tt.sessions))
	for n := range tt.sessions {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ListTools lists the tools of every server (Tool.Server names it).
func (tt *TurnTools) ListTools(ctx context.Context) ([]agentsdk.Tool, error) {
	var out []agentsdk.Tool
	for _, n := range tt.Servers() {
		tools, err := tt.ServerTools(ctx, n)
		if err != nil {
			return nil, err
		}
		out = append(out, tools...)
	}
	return out, nil
}

// ServerTools lists one server's tools.
func (tt *TurnTools) ServerTools(ctx context.Context, server string) ([]agentsdk.Tool, error) {
	sess, ok := tt.sessions[server]
	if !ok {
		return nil, fmt.Errorf("%w: %s", agentsdk.ErrUnknownMCPServer, server)
	}
	return sess.ListTools(ctx)
}

// CallTool calls a tool on the only server, or on the server listing it.
func (tt *TurnTools) CallTool(ctx context.Context, name string, arguments json.RawMessage) (*agentsdk.ToolResult, error) {
	servers := tt.Servers()
	switch len(servers) {
	case 0:
		return nil, fmt.Errorf("turn %s: no MCP server is registered for agent %q", tt.turn.ID, tt.turn.AgentName)
	case 1:
		return tt.CallServerTool(ctx, servers[0], name, arguments)
	}
	for _, s := range servers {
		tools, err := tt.ServerTools(ctx, s)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(tools, func(x agentsdk.Tool) bool { return x.Name == name }) {
			return tt.CallServerTool(ctx, s, name, arguments)
		}
	}
	return nil, fmt.Errorf("turn %s: no MCP server offers tool %q (servers: %v)", tt.turn.ID, name, servers)
}

// CallServerTool calls a tool on the named server. An isError result is a
// value; an error means the call could not be made (or the turn ended).
func (tt *TurnTools) CallServerTool(ctx context.Context, server, name string, arguments json.RawMessage) (*agentsdk.ToolResult, error) {
	t := tt.turn
	sess, ok := tt.sessions[server]
	if !ok {
		return nil, fmt.Errorf("%w: %s", agentsdk.ErrUnknownMCPServer, server)
	}
	if len(arguments) == 0 {
		arguments = json.RawMessage("{}")
	}
	t.mu.Lock()
	if err := t.openLocked(); err != nil {
		t.mu.Unlock()
		return nil, err
	}
	step := t.calls
	t.calls++
	t.mu.Unlock()
	_ = t.task.Trajectory.Append(map[string]any{"type": "tool_call", "step": step, "server": server, "name": name, "arguments": arguments})
	res, err := sess.CallTool(ctx, name, arguments)
	if err != nil {
		_ = t.task.Trajectory.Append(map[string]any{"type": "tool_result", "step": step, "name": name, "is_error": true, "error": err.Error()})
		return nil, err
	}
	_ = t.task.Trajectory.Append(map[string]any{"type": "tool_result", "step": step, "name": name, "is_error": res.IsError, "text": res.Text})
	return res, nil
}

// trainerAgent is the agentsdk agent of a trainer-played agent: each task
// becomes a Turn handed to the episode; the run waits for Turn.End.
type trainerAgent struct {
	ep   *Episode
	name string
}

// trainerConfig is the agent-config a trainer agent accepts: the fields
// deploy_agent and prompt_agent send, so the turn can show them.
type trainerConfig struct {
	SystemPrompt string `json:"system_prompt,omitempty"`
	Model        string `json:"model,omitempty"`
	TaskID       string `json:"task_id,omitempty"`
	MaxTurns     int    `json:"max_turns,omitempty"`
	Effort       string `json:"effort,omitempty"`
	OutputFormat any    `json:"output_format,omitempty"`
}

var (
	_ agentsdk.Agent        = (*trainerAgent)(nil)
	_ agentsdk.Configurable = (*trainerAgent)(nil)
)

func (a *trainerAgent) ConfigDefaults() any { return &trainerConfig{} }

func (a *trainerAgent) Run(ctx context.Context, task *agentsdk.Task) (*agentsdk.Result, error) {
	ep := a.ep
	var cfg trainerConfig
	_ = task.Config(&cfg)
	p := ep.promptFor(a.name)
	timeout := ep.spec.opts.TurnTimeout
	if timeout == 0 {
		timeout = p.timeout
	}
	if timeout == 0 {
		timeout = 600 * time.Second
	}
	raw := map[string]json.RawMessage{}
	for _, k := range []string{"system_prompt", "model", "task_id", "max_turns", "effort", "output_format", "name", "description", "role", "timeout_seconds"} {
		if v := task.ConfigValue(k); len(v) > 0 && string(v) != "null" {
			raw[k] = v
		}
	}
	t := &Turn{ID: ep.nextTurnID(), AgentName: a.name, PromptID: p.promptID, StepID: p.stepID, SystemPrompt: cfg.SystemPrompt,
		Prompt: task.Text(), Parts: task.Parts, Role: task.Role, Config: raw, MCPServers: task.MCPServers,
		TaskID: task.ID, ContextID: task.ContextID, Deadline: time.Now().Add(timeout),
		ep: ep, task: task, timeout: timeout, reply: make(chan string, 1)}
	_ = task.Trajectory.SetFormat(EpisodeTrajectoryFormat)
	ep.track(t, true)
	defer ep.track(t, false)
	select {
	case <-ep.stopping:
		t.finish(turnCancelled)
		return nil, agentsdk.InfraFail("episode_ended", "The episode ended before the turn was played")
	default:
	}
	tctx, cancel := context.WithDeadline(ctx, t.Deadline)
	defer cancel()
	select {
	case ep.turnCh <- t:
	case <-tctx.Done():
		return a.gaveUp(ctx, t)
	case <-ep.stopping:
		t.finish(turnCancelled)
		return nil, agentsdk.InfraFail("episode_ended", "The episode ended before the turn was played")
	}
	select {
	case resp := <-t.reply:
		return a.answer(t, resp), nil
	case <-tctx.Done():
		return a.gaveUp(ctx, t)
	case <-ep.stopping:
		if !t.finish(turnCancelled) {
			return a.gaveUp(ctx, t)
		}
		return nil, agentsdk.InfraFail("episode_ended", "The episode ended before the turn was played")
	}
}

func (a *trainerAgent) answer(t *Turn, resp string) *agentsdk.Result {
	_ = t.task.Trajectory.Append(map[string]any{"type": "final", "text": resp})
	return &agentsdk.Result{Parts: []protocol.Part{protocol.TextPart(resp)}, Usage: protocol.Usage{ToolCallCount: int64(t.ToolCalls())}}
}

// gaveUp ends a turn whose context ended: its own deadline (a timeout the
// episode reports), or the run cancelling the prompt. An End that won the
// race still answers.
func (a *trainerAgent) gaveUp(ctx context.Context, t *Turn) (*agentsdk.Result, error) {
	// Our deadline (ctx still live), or the SDK's timeout_seconds bound
	// (DeadlineExceeded) — not a cancel from the runner.
	timedOut := ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded)
	if timedOut && t.finish(turnTimedOut) {
		_ = t.task.Trajectory.Append(map[string]any{"type": "final", "error_code": "turn_timeout"})
		a.ep.turnTimedOut(t)
		return nil, &agentsdk.Failure{Type: protocol.ErrorTypeAgent, Code: "turn_timeout",
			Message: fmt.Sprintf("The trainer did not end the turn within %s", t.timeout), Usage: protocol.Usage{ToolCallCount: int64(t.ToolCalls())}}
	}
	select {
	case resp := <-t.reply: // End won the race
		return a.answer(t, resp), nil
	default:
	}
	t.finish(turnCancelled)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, agentsdk.InfraFail("episode_ended", "The episode ended before the turn was played")
}
