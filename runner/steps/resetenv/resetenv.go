// Package resetenv is the reset_env step: data/reset on every backing
// server of a deployed env, best effort (fail_task_on_error defaults to
// false). Failures are collected per server in the error.
package resetenv

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// Type is the step type name.
const Type = "reset_env"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }, TolerateErrors: true}
}

// Config is the step's fields.
type Config struct {
	EnvID     string `json:"env_id"`
	EnvStepID string `json:"env_step_id,omitempty"`
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.EnvRef("env_id")}
}

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.EnvID == "" {
		return runner.Required("env_id")
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	env, err := gwclient.ForEnv(rc, c.EnvID, c.EnvStepID)
	if err != nil {
		return err
	}
	var errs []error
	var done []string
	for _, s := range env.Servers {
		if err := env.Server(s).ResetData(ctx); err != nil {
			errs = append(errs, fmt.Errorf("env %s server %s: data/reset: %w", c.EnvID, s, err))
			continue
		}
		done = append(done, s)
	}
	rc.AppendMetadata("env_resets", map[string]any{"step_id": rc.StepID(), "env_id": c.EnvID, "servers": done})
	return errors.Join(errs...)
}
