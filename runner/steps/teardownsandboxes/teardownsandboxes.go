// Package teardownsandboxes is the teardown_sandboxes step: terminate named
// sandboxes (and the sandboxes of named agents and envs) in the middle of a
// run. Its failures are always tolerated (fail_task_on_error must be
// false), and a terminate error is logged, never raised.
package teardownsandboxes

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
)

// Type is the step type name.
const Type = "teardown_sandboxes"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, TolerateErrors: true, MustTolerate: true,
		New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields.
type Config struct {
	AgentNames   []string `json:"agent_names,omitempty"`
	EnvIDs       []string `json:"env_ids,omitempty"`
	SandboxNames []string `json:"sandbox_names,omitempty"`
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{{Field: "env_ids", Collection: string(registry.Envs), List: true}}
}

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if len(c.AgentNames)+len(c.EnvIDs)+len(c.SandboxNames) == 0 {
		return runner.Invalid("sandbox_names", "name at least one of agent_names, env_ids, sandbox_names")
	}
	return nil
}

// Run implements runner.Step. Unknown names are an error (tolerated by
// the scheduler); terminate errors are logged.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	var ids []string
	var errs []error
	for _, name := range c.SandboxNames {
		ds, _, err := rc.Sandbox(ctx, name)
		if err != nil && ds.SandboxID == "" {
			errs = append(errs, fmt.Errorf("sandbox_names: %w", err))
			continue
		}
		ids = append(ids, ds.SandboxID)
	}
	for _, name := range c.AgentNames {
		id, err := rc.EntrySandboxID(runner.KeyDeployedAgents, "agent_name", name)
		if err != nil {
			errs = append(errs, fmt.Errorf("agent_names: %w", err))
			continue
		}
		ids = append(ids, id)
	}
	for _, name := range c.EnvIDs {
		id, err := rc.EntrySandboxID(runner.KeyDeployedEnvs, "env_id", name)
		if err != nil {
			errs = append(errs, fmt.Errorf("env_ids: %w", err))
			continue
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		if id == "" {
			continue
		}
		if err := rc.TerminateSandbox(ctx, id); err != nil {
			rc.Logger().Warn("teardown_sandboxes: terminate failed", "sandbox_id", id, "error", err)
		}
	}
	return errors.Join(errs...)
}
