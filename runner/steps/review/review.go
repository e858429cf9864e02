package review

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentenv/agentenv/runner"
)

// Type is the step type name.
const Type = "review"

// Defaults of the reference.
const (
	DefaultTimeoutSeconds      = 10800 // 3 h
	DefaultPollIntervalSeconds = 5
)

// upstreamMax bounds the response text copied into the review record for
// the reviewer (the record is polled).
const upstreamMax = 4000

// ErrAborted is matched by the error of a review someone aborted.
var ErrAborted = errors.New("review aborted")

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields.
type Config struct {
	Label               string   `json:"label,omitempty"`
	TimeoutSeconds      *float64 `json:"timeout_seconds,omitempty"`       // 10800
	PollIntervalSeconds *float64 `json:"poll_interval_seconds,omitempty"` // 5
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser: a review names no entity.
func (c *Config) EntityRefs() []runner.EntityRef { return nil }

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.TimeoutSeconds != nil && *c.TimeoutSeconds <= 0 {
		return runner.Invalid("timeout_seconds", "must be positive")
	}
	if c.PollIntervalSeconds != nil && *c.PollIntervalSeconds <= 0 {
		return runner.Invalid("poll_interval_seconds", "must be positive")
	}
	return nil
}

func seconds(p *float64, def float64) time.Duration {
	if p != nil {
		def = *p
	}
	return time.Duration(def * float64(time.Second))
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	docs := rc.Services().Documents
	if docs == nil {
		return fmt.Errorf("review needs the document store: %w", runner.ErrNoStore)
	}
	v, _ := rc.Metadata("instance_id")
	instanceID, _ := v.(string)
	if instanceID == "" {
		return errors.New("review: the run has no instance_id, so no decision can be recorded for it")
	}
	stepID := rc.StepID()
	if err := PutAwaiting(ctx, docs, Record{InstanceID: instanceID, StepID: stepID, Label: c.Label, Upstream: upstream(rc)}); err != nil {
		return fmt.Errorf("register review: %w", err)
	}
	timeout := seconds(c.TimeoutSeconds, DefaultTimeoutSeconds)
	rc.Logger().Info("review awaiting a decision", "instance_id", instanceID, "step_id", stepID, "timeout", timeout,
		"how", "agent-env review continue|abort --instance-id "+instanceID+" --step-id "+stepID)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(seconds(c.PollIntervalSeconds, DefaultPollIntervalSeconds))
	defer tick.Stop()
	for {
		r, err := Get(ctx, docs, instanceID, stepID)
		if err != nil {
			return fmt.Errorf("read review: %w", err)
		}
		switch r.State {
		case StateContinue:
			rc.SetMetadataEntry("review_decisions", stepID, map[string]any{"decision": StateContinue, "decided_by": nullable(r.DecidedBy)})
			return nil
		case StateAbort:
			by := ""
			if r.DecidedBy != "" {
				by = " (" + r.DecidedBy + ")"
			}
			return fmt.Errorf("review %q: %w by operator%s", stepID, ErrAborted, by)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("review %q timed out after %s awaiting a decision", stepID, timeout)
		case <-tick.C:
		}
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// upstream is what the reviewer sees of the run: the last prompt
// response, its structured output when it has one, else its text
// (bounded).
func upstream(rc *runner.RunContext) map[string]any {
	list, _ := rc.Snapshot()[runner.KeyPromptResponses].([]any)
	if len(list) == 0 {
		return nil
	}
	last, _ := list[len(list)-1].(map[string]any)
	out := map[string]any{"step_id": last["step_id"]}
	if so, ok := last["structured_output"]; ok && so != nil {
		out["structured_output"] = so
		return out
	}
	text, _ := last["response"].(string)
	if len(text) > upstreamMax {
		text = text[:upstreamMax]
	}
	out["response"] = text
	return out
}
