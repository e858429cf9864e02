package rubricsverifier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/agentenv/agentenv/internal/a2aclient"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/examplecatalog"
)

// DefaultJudgeAgentID is the judge agent when judge_a2a_agent_id is unset:
// the toolcaller example, a plain model loop (built on first use from this
// repository's source when it is not registered).
const DefaultJudgeAgentID = "toolcaller"

// ungradedCodes are the error codes of a judge task that ran and answered
// with no usable grade (the toolcaller's, and the agentsdk's, names): the
// verification scores 0. Any other failure fails the step.
var ungradedCodes = []string{"invalid_structured_output", "empty_answer"}

// judgeTTL bounds the judge's sandbox should teardown be missed (a
// crashed runner); the step tears it down itself on every path.
const judgeTTL = 2 * time.Hour

// agentJudge deploys the judge agent, hands it the work, polls its answer
// and tears it down, whatever happened. It returns the judge's answer
// text (its structured output when it gave one). A judge task that ends
// without a grade although the judge answered (ungradedCodes: not the
// asked JSON, an empty answer) wraps errMalformed, so the caller scores it
// 0 like an unreadable answer; deploying or reaching the agent, any other
// failed task or a timeout fails the step instead, since a 0 would blame
// the graded agent for the judge's trouble.
func (c *Config) agentJudge(ctx context.Context, rc *runner.RunContext, verifierID string, w work) (answer string, err error) {
	d := rc.Services().Deployer
	if d == nil {
		return "", fmt.Errorf("use_agent_judge: no agent deployer configured: %w", runner.ErrNoStore)
	}
	agentID := c.JudgeA2AAgentID
	if agentID == "" {
		agentID = DefaultJudgeAgentID
	}
	if err := examplecatalog.EnsureAgent(ctx, d, agentID); err != nil {
		return "", fmt.Errorf("judge agent %q: %w", agentID, err)
	}
	base, key := c.endpoint(rc)
	spec := c.JudgeSandboxType
	for _, k := range []string{"agent_sandbox", "sandbox"} { // the run's --agent-sandbox / --sandbox
		if spec == "" {
			spec = rc.UserOverride(k)
		}
	}
	ai, err := d.DeployAgent(ctx, envdeploy.AgentDeployRequest{Agent: registry.Ref{ID: agentID}, Sandbox: spec, TTL: judgeTTL,
		ModelBaseURL: base, ModelAPIKey: key})
	if err != nil {
		return "", fmt.Errorf("deploy judge agent %q: %w", agentID, err)
	}
	rc.Logger().Info("judge agent deployed", "verifier_id", verifierID, "a2a_agent_id", agentID, "instance_id", ai.InstanceID)
	record := map[string]any{"a2a_agent_id": ai.AgentID, "a2a_agent_version": ai.AgentVersion, "instance_id": ai.InstanceID,
		"sandbox_type": ai.SandboxType, "output_format": string(c.OutputFormat.OrDefault())}
	if c.JudgePriority != nil {
		// Recorded only: the sandboxes of this build have no scheduling
		// priority to give it.
		record["judge_priority"] = *c.JudgePriority
	}
	defer func() {
		// Torn down on every path, with a context that outlives a canceled run.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if terr := d.TeardownAgent(tctx, ai.InstanceID); terr != nil {
			rc.Logger().Warn("judge agent teardown failed", "instance_id", ai.InstanceID, "error", terr)
			record["teardown_error"] = terr.Error()
		}
		rc.SetMetadataEntry("judge_agents", verifierID, record)
	}()
	ac := a2aclient.New(ai.APIURL, &http.Client{Timeout: 60 * time.Second})
	card, err := ac.Card(ctx)
	if err != nil {
		return "", fmt.Errorf("judge agent %q: %w", agentID, err)
	}
	if err := c.configureJudge(ctx, ac, card); err != nil {
		return "", fmt.Errorf("judge agent %q: agent-config: %w", agentID, err)
	}
	data, _ := json.Marshal(w)
	parts := []a2aclient.Part{{Kind: "text", Text: c.userMessage(w)}, {Kind: "data", Data: data}}
	if !slices.Contains(a2aclient.Supported(card), "system_prompt") {
		// An agent that takes no system prompt still needs the
		// instructions: they lead the message.
		parts = append([]a2aclient.Part{{Kind: "text", Text: c.systemPrompt()}}, parts...)
	}
	task, err := ac.Send(ctx, a2aclient.NewID(), parts)
	if err != nil {
		return "", fmt.Errorf("judge agent %q: %w", agentID, err)
	}
	taskID := task.ID
	record["a2a_task_id"] = taskID
	task, err = ac.Poll(ctx, taskID, 500*time.Millisecond, c.timeout())
	if u := c.storeJudgeTrajectory(ctx, rc, ac, verifierID, taskID); u != "" {
		record["trajectory_object_url"] = u
	}
	if err != nil {
		if errors.Is(err, a2aclient.ErrTimeout) {
			_ = ac.Cancel(context.WithoutCancel(ctx), taskID)
			return "", fmt.Errorf("judge agent %q gave no answer within judge_timeout_seconds (%s): %w", agentID, c.timeout(), err)
		}
		return "", fmt.Errorf("judge agent %q: %w", agentID, err)
	}
	record["a2a_state"] = task.Status.State
	reply := a2aclient.ReadReply(task)
	if reply.ErrorCode == "task_timeout" { // the agent applied judge_timeout_seconds itself
		return "", fmt.Errorf("judge agent %q gave no answer within judge_timeout_seconds (%s): %s", agentID, c.timeout(), reply.ErrorMessage)
	}
	if task.Status.State != "completed" {
		msg := reply.ErrorMessage
		if msg == "" {
			msg = reply.Text
		}
		err := fmt.Errorf("the judge agent's task ended %s (%s %s): %s", task.Status.State, reply.ErrorType, reply.ErrorCode, head(msg, 300))
		if !slices.Contains(ungradedCodes, reply.ErrorCode) {
			// The judge could not work (its model failed or was
			// unreachable, say): a 0 would blame the graded agent, so the
			// step fails.
			return "", err
		}
		// The judge worked and gave no readable grade: the criteria
		// score 0, as with an unreadable answer.
		return "", fmt.Errorf("%w: %v", errMalformed, err)
	}
	if reply.StructuredOutput != nil {
		return string(reply.StructuredOutput), nil
	}
	return reply.Text, nil
}

// configureJudge sends the judge's agent-config: the instructions, the
// model, the answer's JSON schema and the thinking knobs, each only when
// the agent's card supports it.
func (c *Config) configureJudge(ctx context.Context, ac *a2aclient.Client, card json.RawMessage) error {
	want := map[string]any{"system_prompt": c.systemPrompt(), "model": c.model(),
		"output_format": c.OutputFormat.schema(), "timeout_seconds": int(math.Ceil(c.timeout().Seconds()))}
	if c.MaxThinkingTokens != nil {
		want["max_thinking_tokens"] = *c.MaxThinkingTokens
	}
	if c.Effort != "" {
		want["effort"] = c.Effort
	}
	return ac.Configure(ctx, card, want)
}

// storeJudgeTrajectory keeps the judge's own trajectory under
// judge_trajectories/ (best effort), so a grade can be audited.
func (c *Config) storeJudgeTrajectory(ctx context.Context, rc *runner.RunContext, ac *a2aclient.Client, verifierID, taskID string) string {
	objs := rc.Services().Objects
	if objs == nil {
		return ""
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	traj, err := ac.Trajectory(cctx, taskID)
	if err != nil {
		return ""
	}
	key := "judge_trajectories/"
	if inst, ok := rc.Metadata("instance_id"); ok && inst != nil && fmt.Sprint(inst) != "" {
		key += fmt.Sprint(inst) + "/"
	}
	key += "verifier_id=" + verifierID + "/trajectory.json"
	if _, err := objs.Put(cctx, key, bytes.NewReader(traj), nil); err != nil {
		rc.Logger().Warn("storing the judge trajectory failed", "key", key, "error", err)
		return ""
	}
	return objs.URL(key)
}
