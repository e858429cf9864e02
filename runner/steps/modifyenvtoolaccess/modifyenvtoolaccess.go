// Package modifyenvtoolaccess is the modify_env_tool_access step: change a
// role's tool rules on a deployed env's gateway (POST /tools/disable or
// /tools/enable) and record the returned snapshot in
// metadata.tool_access_changes[].
package modifyenvtoolaccess

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// Type is the step type name.
const Type = "modify_env_tool_access"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields.
type Config struct {
	EnvID     string          `json:"env_id"`
	EnvStepID string          `json:"env_step_id,omitempty"`
	Action    string          `json:"action"` // disable | enable
	Role      string          `json:"role"`
	Tools     json.RawMessage `json:"tools"` // list of names or "*"
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
	if c.Action != "disable" && c.Action != "enable" {
		return runner.Invalid("action", "must be disable or enable, got %q", c.Action)
	}
	if c.Role == "" {
		return runner.Required("role")
	}
	var star string
	var list []string
	if json.Unmarshal(c.Tools, &star) == nil {
		if star != "*" {
			return runner.Invalid("tools", "must be a list of tool names or \"*\"")
		}
		return nil
	}
	if err := json.Unmarshal(c.Tools, &list); err != nil || list == nil {
		return runner.Invalid("tools", "must be a list of tool names or \"*\"")
	}
	for _, t := range list {
		if t == "" {
			return runner.Invalid("tools", "tool names must not be empty")
		}
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	env, err := gwclient.ForGateway(rc, c.EnvID, c.EnvStepID, Type, "role tool rules")
	if err != nil {
		return err
	}
	var snap map[string]any
	if err := env.Gateway.Do(ctx, http.MethodPost, "/tools/"+c.Action, "", map[string]any{"role": c.Role, "tools": c.Tools}, &snap); err != nil {
		return fmt.Errorf("%s tools for role %q on env %s: %w", c.Action, c.Role, c.EnvID, err)
	}
	rc.AppendMetadata("tool_access_changes", map[string]any{"step_id": rc.StepID(), "env_id": c.EnvID,
		"action": c.Action, "role": c.Role, "tools": c.Tools, "snapshot": snap})
	return nil
}
