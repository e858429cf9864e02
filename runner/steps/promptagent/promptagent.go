// Package promptagent is the prompt_agent step: send a prompt to a
// deployed agent over A2A (non-blocking message/send, then tasks/get
// polling), read the reply and the agent's trajectory, store the
// trajectory in the object store and record prompt_responses[].
//
// With max_conversation_turns > 1 and user_agent_name, a second deployed
// agent plays the user: each agent reply is sent to it, and its answer
// ({message, done} structured output, or its text) is the next prompt
// until it says done or the turns run out. With user_a2a_url instead, the
// user is an external A2A endpoint (a person's chat front end, another
// framework's user simulator) that is not an agent of the run.
package promptagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentenv/agentenv/internal/a2aclient"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// Type is the step type name.
const Type = "prompt_agent"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields.
type Config struct {
	Prompt                  string            `json:"prompt,omitempty"`
	Parts                   []a2aclient.Part  `json:"parts,omitempty"`
	PromptID                string            `json:"prompt_id,omitempty"`
	AgentName               string            `json:"agent_name,omitempty"`
	TimeoutSeconds          *float64          `json:"timeout_seconds,omitempty"`       // 600
	PollIntervalSeconds     *float64          `json:"poll_interval_seconds,omitempty"` // 2
	TrajectoryOutputPrefix  string            `json:"trajectory_output_prefix,omitempty"`
	Model                   string            `json:"model,omitempty"`
	ModelParams             map[string]any    `json:"model_params,omitempty"`
	SystemPrompt            string            `json:"system_prompt,omitempty"`
	MaxTurns                *int              `json:"max_turns,omitempty"`
	OutputFormat            json.RawMessage   `json:"output_format,omitempty"`
	MaxThinkingTokens       *int              `json:"max_thinking_tokens,omitempty"`
	Effort                  string            `json:"effort,omitempty"`
	Harness                 string            `json:"harness,omitempty"`
	AgentenvTools           []string          `json:"agentenv_tools,omitempty"`
	ContextID               string            `json:"context_id,omitempty"`
	MaxConversationTurns    *int              `json:"max_conversation_turns,omitempty"` // 1
	UserAgentName           string            `json:"user_agent_name,omitempty"`        // human_agent
	UserA2AURL              string            `json:"user_a2a_url,omitempty"`
	UserAgentTimeoutSeconds *float64          `json:"user_agent_timeout_seconds,omitempty"` // 600
	UserOutputFormat        json.RawMessage   `json:"user_output_format,omitempty"`
	UserModel               string            `json:"user_model,omitempty"`
	Metadata                map[string]string `json:"metadata,omitempty"`
}

var (
	_ runner.Step      = (*Config)(nil)
	_ runner.Validator = (*Config)(nil)
)

// reservedModelParams may not be set through model_params.
var reservedModelParams = []string{"model", "messages", "tools", "stream", "api_key", "api_base", "base_url"}

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if (c.Prompt == "") == (len(c.Parts) == 0) {
		return runner.Invalid("prompt", "give exactly one of prompt or parts")
	}
	for i, p := range c.Parts {
		switch p.Kind {
		case "text":
			if p.Text == "" {
				return runner.Invalid("parts", "parts[%d]: text must not be empty", i)
			}
		case "data", "file":
		default:
			return runner.Invalid("parts", "parts[%d]: kind must be text, data or file", i)
		}
	}
	for _, k := range reservedModelParams {
		if _, ok := c.ModelParams[k]; ok {
			return runner.Invalid("model_params", "%q is reserved", k)
		}
	}
	if c.TimeoutSeconds != nil && *c.TimeoutSeconds <= 0 {
		return runner.Invalid("timeout_seconds", "must be positive")
	}
	if c.PollIntervalSeconds != nil && *c.PollIntervalSeconds <= 0 {
		return runner.Invalid("poll_interval_seconds", "must be positive")
	}
	if c.MaxConversationTurns != nil && *c.MaxConversationTurns < 1 {
		return runner.Invalid("max_conversation_turns", "must be >= 1")
	}
	if c.UserA2AURL != "" {
		u, err := url.Parse(c.UserA2AURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return runner.Invalid("user_a2a_url", "%q must be an absolute http(s) URL without credentials", c.UserA2AURL)
		}
		if c.MaxConversationTurns == nil || *c.MaxConversationTurns < 2 {
			return runner.Invalid("user_a2a_url", "names the user of a conversation: set max_conversation_turns above 1")
		}
		if c.UserAgentName != "" {
			return runner.Invalid("user_a2a_url", "give user_a2a_url or user_agent_name, not both")
		}
	}
	return nil
}

func secs(p *float64, def float64) time.Duration {
	if p == nil {
		return time.Duration(def * float64(time.Second))
	}
	return time.Duration(*p * float64(time.Second))
}

// turn is one exchange with the target agent.
type turn struct {
	task  *a2aclient.Task
	reply a2aclient.Reply
	url   string // stored trajectory
	err   error
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	promptID := c.PromptID
	if promptID == "" {
		promptID = runner.RandomHex(8)
	}
	agentName := c.AgentName
	if agentName == "" {
		agentName = runner.DefaultAgentName
	}
	agent, err := rc.AgentEntry(agentName)
	if err != nil {
		return fmt.Errorf("agent_name: %w", err)
	}
	api, _ := agent["api_url"].(string)
	ac := a2aclient.New(api, nil)
	card, err := ac.Card(ctx)
	if err != nil {
		return fmt.Errorf("agent %q: %w", agentName, err)
	}
	model := c.Model
	if m, _ := rc.Snapshot()["agent_model"].(string); m != "" {
		model = m
	}
	if err := c.configure(ctx, ac, card, model, rc); err != nil {
		return fmt.Errorf("agent %q: agent-config: %w", agentName, err)
	}
	turns := 1
	if c.MaxConversationTurns != nil {
		turns = *c.MaxConversationTurns
	}
	var user *a2aclient.Client
	var userCard json.RawMessage
	if turns > 1 {
		name := c.UserAgentName
		if name == "" {
			name = "human_agent"
		}
		u := strings.TrimRight(c.UserA2AURL, "/") // an external user endpoint, not an agent of the run
		if u == "" {
			ue, err := rc.AgentEntry(name)
			if err != nil {
				return fmt.Errorf("user_agent_name: %w", err)
			}
			u, _ = ue["api_url"].(string)
		} else {
			name = u
		}
		user = a2aclient.New(u, nil)
		ucard, err := user.Card(ctx)
		if err != nil {
			return fmt.Errorf("user agent %q: %w", name, err)
		}
		userCard = ucard
		if err := c.configureUser(ctx, user, ucard); err != nil {
			return fmt.Errorf("user agent %q: agent-config: %w", name, err)
		}
	}
	contextID := c.ContextID
	if contextID == "" {
		contextID = a2aclient.NewID()
	}
	userContext := a2aclient.NewID()
	prefix := c.TrajectoryOutputPrefix
	if prefix == "" {
		prefix = "prompt_agent_trajectories/"
		if inst, ok := rc.Metadata("instance_id"); ok && inst != "" {
			prefix += fmt.Sprint(inst) + "/"
		}
		prefix += "prompt_id=" + promptID + "/"
	}
	parts := c.Parts
	if c.Prompt != "" {
		parts = []a2aclient.Part{{Kind: "text", Text: c.Prompt}}
	}
	timeout, poll := secs(c.TimeoutSeconds, 600), secs(c.PollIntervalSeconds, 2)
	var done []turn
	var userParts [][]a2aclient.Part
	for n := 1; n <= turns; n++ {
		t := c.exchange(ctx, rc, ac, contextID, parts, poll, timeout, prefix, n, turns > 1)
		done = append(done, t)
		if t.err != nil || n == turns || user == nil {
			break
		}
		// The user agent's deterministic triggers decide first (when it
		// hosts them); otherwise it answers the reply itself.
		var msg string
		var finished, decided bool
		if a2aclient.Advertises(userCard, protocol.URITriggers) {
			var derr error
			msg, finished, decided, derr = decide(ctx, rc, user, n, t.reply.Text, userContext)
			if derr != nil {
				done[len(done)-1].err = fmt.Errorf("user agent triggers: %w", derr)
				break
			}
		}
		if !decided {
			ut, err := user.Send(ctx, userContext, []a2aclient.Part{{Kind: "text", Text: orPlaceholder(t.reply.Text)}})
			if err == nil {
				ut, err = user.Poll(ctx, ut.ID, poll, secs(c.UserAgentTimeoutSeconds, 600))
			}
			if err != nil {
				done[len(done)-1].err = fmt.Errorf("user agent: %w", err)
				break
			}
			msg, finished = userTurn(a2aclient.ReadReply(ut))
		}
		if finished || msg == "" {
			break
		}
		parts = []a2aclient.Part{{Kind: "text", Text: msg}}
		userParts = append(userParts, parts)
	}
	last := done[len(done)-1]
	entry := map[string]any{"prompt_id": promptID, "response": last.reply.Text, "prompt_text": c.promptText(),
		"agent_name": agentName, "step_id": rc.StepID(), "a2a_context_id": contextID, "agent_session_id": contextID,
		"tool_call_count": 0, "model": nilIfEmpty(model)}
	total := 0
	var urls []string
	for _, t := range done {
		total += t.reply.ToolCallCount
		if t.url != "" {
			urls = append(urls, t.url)
		}
	}
	entry["tool_call_count"] = total
	if c.UserA2AURL != "" {
		entry["user_a2a_url"] = c.UserA2AURL
	}
	if last.url != "" {
		entry["agent_trajectory_object_url"] = last.url
		entry["agent_trajectory_s3_uri"] = last.url
	}
	if objs := rc.Services().Objects; objs != nil {
		entry["agent_trajectory_object_prefix"] = objs.URL(prefix)
		entry["agent_trajectory_s3_prefix"] = entry["agent_trajectory_object_prefix"]
	}
	if user != nil && a2aclient.Advertises(userCard, protocol.URITriggers) {
		var st struct {
			FiringLog []any `json:"firing_log"`
		}
		if b, err := user.ExtOK(ctx, http.MethodGet, "/ext/triggers", nil); err == nil && json.Unmarshal(b, &st) == nil {
			entry["user_agent_trigger_log"] = st.FiringLog
		}
	}
	if turns > 1 {
		entry["target_agent_per_turn_trajectory_object_urls"] = urls
		entry["source_agent_per_turn_prompt_parts"] = userParts
		entry["conversation_turns"] = len(done)
	}
	if last.reply.StructuredOutput != nil {
		var so any
		if json.Unmarshal(last.reply.StructuredOutput, &so) == nil {
			entry["structured_output"] = so
		}
	}
	if last.task != nil {
		entry["a2a_task_id"] = last.task.ID
		entry["a2a_state"] = last.task.Status.State
	}
	switch {
	case last.err != nil:
		entry["error_type"] = "infra_error"
		entry["error_code"] = "agent_unreachable"
		if errors.Is(last.err, a2aclient.ErrTimeout) {
			entry["error_code"] = "agent_timeout"
		}
		entry["error_message"] = last.err.Error()
	case last.reply.ErrorType != "":
		entry["error_type"], entry["error_code"], entry["error_message"] = last.reply.ErrorType, last.reply.ErrorCode, last.reply.ErrorMessage
	case last.task != nil && last.task.Status.State != "completed":
		entry["error_type"], entry["error_code"] = "agent_error", "task_"+last.task.Status.State
		entry["error_message"] = "the agent's task ended " + last.task.Status.State
	}
	c.recordEnvStates(ctx, rc, entry)
	if err := rc.AddPromptResponseEntry(entry); err != nil {
		return err
	}
	if last.err != nil {
		return fmt.Errorf("prompt %s to agent %q: %w", promptID, agentName, last.err)
	}
	return nil
}

func orPlaceholder(s string) string {
	if s == "" {
		return "(no reply)"
	}
	return s
}

// userTurn reads the user agent's answer: {message, done} as structured
// output, or its text.
func userTurn(r a2aclient.Reply) (string, bool) {
	var so struct {
		Message *string `json:"message"`
		Done    bool    `json:"done"`
	}
	if r.StructuredOutput != nil && json.Unmarshal(r.StructuredOutput, &so) == nil && (so.Message != nil || so.Done) {
		msg := ""
		if so.Message != nil {
			msg = *so.Message
		}
		return msg, so.Done
	}
	return r.Text, false
}

func (c *Config) promptText() string {
	if c.Prompt != "" {
		return c.Prompt
	}
	var texts []string
	for _, p := range c.Parts {
		if p.Kind == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// exchange sends one turn, polls it to the end and stores its trajectory.
func (c *Config) exchange(ctx context.Context, rc *runner.RunContext, ac *a2aclient.Client, contextID string,
	parts []a2aclient.Part, poll, timeout time.Duration, prefix string, n int, conversation bool) turn {
	var t turn
	task, err := ac.Send(ctx, contextID, parts)
	if err != nil {
		t.err = err
		return t
	}
	task, err = ac.Poll(ctx, task.ID, poll, timeout)
	t.task, t.err = task, err
	t.reply = a2aclient.ReadReply(task)
	if task == nil {
		return t
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	traj := agentTrajectory(cctx, rc.Logger(), ac, task.ID)
	if traj == nil {
		return t
	}
	objs := rc.Services().Objects
	if objs == nil {
		return t
	}
	key := prefix + "trajectory.json"
	if conversation {
		key = fmt.Sprintf("%sturn_%03d/trajectory.json", prefix, n)
	}
	if _, err := objs.Put(cctx, key, bytes.NewReader(traj), nil); err != nil {
		rc.Logger().Warn("storing the trajectory failed", "key", key, "error", err)
		return t
	}
	t.url = objs.URL(key)
	return t
}

// agentTrajectory reads a turn's trajectory from the agent, by task id
// (best effort: nil when there is none). An agent that never appended
// answers 404 for an ended task, and one without the trajectory extension
// answers 404 for the path: both are an agent's documented choice to keep
// none, so the turn has no trajectory and nothing is logged above debug
// level. Anything else (a 5xx, a broken connection, a body that is not a
// trajectory) is worth a warning.
func agentTrajectory(ctx context.Context, log *slog.Logger, ac *a2aclient.Client, taskID string) json.RawMessage {
	tr, err := ac.Trajectory(ctx, taskID)
	switch {
	case errors.Is(err, a2aclient.ErrNoTrajectory):
		log.Debug("the agent kept no trajectory for this turn", "task_id", taskID)
	case err != nil:
		log.Warn("no agent trajectory", "task_id", taskID, "error", err)
	}
	return tr
}

// configure sends the negotiated agent-config fields (only names the card
// supports; nothing when none match).
func (c *Config) configure(ctx context.Context, ac *a2aclient.Client, card json.RawMessage, model string, rc *runner.RunContext) error {
	want := map[string]any{}
	if model != "" {
		want["model"] = model
	}
	if c.SystemPrompt != "" {
		want["system_prompt"] = c.SystemPrompt
	}
	if c.Effort != "" {
		want["effort"] = c.Effort
	}
	if c.Harness != "" {
		want["harness"] = c.Harness
	}
	if c.MaxTurns != nil {
		want["max_turns"] = *c.MaxTurns
	}
	if c.MaxThinkingTokens != nil {
		want["max_thinking_tokens"] = *c.MaxThinkingTokens
	}
	if len(c.OutputFormat) > 0 {
		want["output_format"] = json.RawMessage(c.OutputFormat)
	}
	if c.TimeoutSeconds != nil {
		want["timeout_seconds"] = int(*c.TimeoutSeconds)
	}
	if id, ok := rc.Metadata("task_id"); ok && id != "" {
		want["task_id"] = id
	}
	if len(c.AgentenvTools) > 0 {
		want["agentenv_tools"] = c.AgentenvTools
	}
	if len(c.ModelParams) > 0 {
		want["model_params"] = c.ModelParams
	}
	return ac.Configure(ctx, card, want)
}

func (c *Config) configureUser(ctx context.Context, ac *a2aclient.Client, card json.RawMessage) error {
	want := map[string]any{}
	if c.UserModel != "" {
		want["model"] = c.UserModel
	}
	of := c.UserOutputFormat
	if len(of) == 0 {
		of = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"},"done":{"type":"boolean"}},"required":["message","done"]}`)
	}
	want["output_format"] = of
	return ac.Configure(ctx, card, want)
}

// recordEnvStates reads each deployed env's /triggers/state (waiting up
// to 60 s while a trigger is settling) and /clock/state
// into the response entry. Failures are logged, never fatal.
func (c *Config) recordEnvStates(ctx context.Context, rc *runner.RunContext, entry map[string]any) {
	trig, clock := map[string]any{}, map[string]any{}
	for _, e := range rc.Envs() {
		if e.GatewayURL == "" {
			continue
		}
		gw := gwclient.ForDeployed(rc, e, &http.Client{Timeout: 10 * time.Second})
		deadline := time.Now().Add(60 * time.Second)
		for {
			st, err := gw.TriggersState(ctx)
			if err != nil {
				rc.Logger().Warn("reading trigger state", "env_id", e.EnvID, "error", err)
				break
			}
			if !st.Settling() || time.Now().After(deadline) {
				var v any
				_ = json.Unmarshal(st.Raw, &v)
				trig[e.EnvID] = v
				break
			}
			tm := time.NewTimer(250 * time.Millisecond)
			select {
			case <-ctx.Done():
				tm.Stop()
				return
			case <-tm.C:
			}
		}
		if cs, err := gw.ClockState(ctx); err == nil {
			clock[e.EnvID] = cs
		}
	}
	if len(trig) > 0 {
		entry["env_trigger_states"] = trig
	}
	if len(clock) > 0 {
		entry["env_clock_states"] = clock
	}
}

// decide asks the user agent's triggers for the next user turn:
// each env's gateway trigger statuses are read
// first (fail-closed); fired parts become the next prompt, done ends the
// conversation, and neither (decided=false) leaves the turn to the agent.
func decide(ctx context.Context, rc *runner.RunContext, user *a2aclient.Client, turn int, solver, contextID string) (msg string, done, decided bool, err error) {
	envTriggers := map[string]map[string]string{}
	for _, e := range rc.Envs() {
		if e.GatewayURL == "" {
			continue
		}
		st, err := gwclient.ForDeployed(rc, e, &http.Client{Timeout: 10 * time.Second}).TriggersState(ctx)
		if err != nil {
			return "", false, false, fmt.Errorf("env %s trigger state: %w", e.EnvID, err)
		}
		m := map[string]string{}
		for _, t := range st.Triggers {
			status := t.Status
			if t.FireCount > 0 && status != "firing" && status != "queued" {
				status = "fired"
			}
			m[t.ID] = status
		}
		envTriggers[e.EnvID] = m
	}
	b, err := user.ExtOK(ctx, http.MethodPost, "/ext/triggers/decide", map[string]any{"turn": turn, "solver_message": solver,
		"context_id": contextID, "env_triggers": envTriggers})
	if err != nil {
		return "", false, false, err
	}
	var out struct {
		Parts []a2aclient.Part `json:"parts"`
		Done  bool             `json:"done"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return "", false, false, fmt.Errorf("decide answer: %w", err)
	}
	var texts []string
	for _, p := range out.Parts {
		if p.Kind == "text" && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	if out.Done {
		return "", true, true, nil
	}
	if len(texts) == 0 {
		return "", false, false, nil
	}
	return strings.Join(texts, "\n"), false, true, nil
}
