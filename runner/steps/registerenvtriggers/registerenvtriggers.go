// Package registerenvtriggers is the register_env_triggers step: register
// triggers on a deployed env's gateway (POST
// /triggers/register). executor_agent_name names a deployed agent that runs
// the triggers' nl actions; it must have an explicit role not in
// watch_roles, and is reached at its A2A URL as the gateway sees it.
package registerenvtriggers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// Type is the step type name.
const Type = "register_env_triggers"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields.
type Config struct {
	EnvID                  string            `json:"env_id"`
	EnvStepID              string            `json:"env_step_id,omitempty"`
	Triggers               []json.RawMessage `json:"triggers"`
	WatchRoles             []string          `json:"watch_roles,omitempty"`
	ExecutorAgentName      string            `json:"executor_agent_name,omitempty"`
	ExecutorTimeoutSeconds *float64          `json:"executor_timeout_seconds,omitempty"` // 120
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
	if len(c.Triggers) == 0 {
		return runner.Required("triggers")
	}
	for i, t := range c.Triggers {
		var m map[string]any
		if json.Unmarshal(t, &m) != nil {
			return runner.Invalid("triggers", "triggers[%d] must be an object", i)
		}
	}
	for _, r := range c.WatchRoles {
		if r == "" {
			return runner.Invalid("watch_roles", "roles must be non-empty")
		}
	}
	if c.ExecutorTimeoutSeconds != nil && *c.ExecutorTimeoutSeconds <= 0 {
		return runner.Invalid("executor_timeout_seconds", "must be positive")
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	env, err := gwclient.ForGateway(rc, c.EnvID, c.EnvStepID, Type, "triggers")
	if err != nil {
		return err
	}
	body := map[string]any{"triggers": c.Triggers}
	if c.WatchRoles != nil {
		body["watch_roles"] = c.WatchRoles
	}
	if c.ExecutorAgentName != "" {
		a, err := rc.AgentEntry(c.ExecutorAgentName)
		if err != nil {
			return fmt.Errorf("executor_agent_name: %w", err)
		}
		role, _ := a["role"].(string)
		if role == "" {
			return fmt.Errorf("executor_agent_name %q: the agent has no explicit role (give deploy_agent a role)", c.ExecutorAgentName)
		}
		watch := c.WatchRoles
		if watch == nil {
			watch = []string{"default"}
		}
		if slices.Contains(watch, role) {
			return fmt.Errorf("executor_agent_name %q: its role %q is in watch_roles", c.ExecutorAgentName, role)
		}
		u, _ := a["a2a_url"].(string)
		if u == "" {
			u, _ = a["api_url"].(string)
		}
		u = strings.TrimRight(u, "/")
		if d := rc.Services().Deployer; d != nil {
			st, _ := env.Entry["sandbox_type"].(string)
			if b, ok := d.Backends[st]; ok {
				u = b.ReachableURL(u)
			}
		}
		timeout := 120.0
		if c.ExecutorTimeoutSeconds != nil {
			timeout = *c.ExecutorTimeoutSeconds
		}
		body["executor"] = map[string]any{"a2a_url": u, "role": role, "timeout_seconds": timeout}
	}
	var out struct {
		Added []string `json:"added"`
		All   []string `json:"all"`
	}
	if err := env.Gateway.Do(ctx, http.MethodPost, "/triggers/register", "", body, &out); err != nil {
		return fmt.Errorf("register triggers on env %s: %w", c.EnvID, err)
	}
	rc.AppendMetadata("env_trigger_registrations", map[string]any{"step_id": rc.StepID(), "env_id": c.EnvID,
		"added": out.Added, "all": out.All})
	return nil
}
