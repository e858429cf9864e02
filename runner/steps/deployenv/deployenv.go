// Package deployenv is the deploy_env step: deploy a registered env behind
// its gateway (or alone, for env_provider_type server) through the run's
// envdeploy.Deployer and record it in
// deployed_envs[]. The instance is held among
// the run's sandboxes, so the run's teardown removes it.
package deployenv

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"time"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/examplecatalog"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// Type is the step type name.
const Type = "deploy_env"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields.
type Config struct {
	EnvID              string         `json:"env_id"`
	EnvVersion         int            `json:"env_version,omitempty"`
	TTLSeconds         *int           `json:"ttl_seconds,omitempty"` // 7200
	DiskSizeGB         *float64       `json:"disk_size_gb,omitempty"`
	GatewayMode        string         `json:"gateway_mode,omitempty"` // performance | consistent
	CPU                *float64       `json:"cpu,omitempty"`
	MemoryMB           *int           `json:"memory_mb,omitempty"`
	SandboxType        string         `json:"sandbox_type,omitempty"` // overridden by user_overrides.env_sandbox
	EnvStateType       string         `json:"env_state_type,omitempty"`
	EnvStateInstanceID string         `json:"env_state_instance_id,omitempty"`
	Metadata           map[string]any `json:"metadata,omitempty"`
	ArtifactID         string         `json:"artifact_id,omitempty"` // informational
	ArtifactVersion    int            `json:"artifact_version,omitempty"`
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
	_ runner.Preflighter  = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{{Field: "env_id", Collection: string(registry.Envs), VersionField: "env_version"},
		runner.ArtifactRef("artifact_id", "artifact_version")}
}

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.EnvID == "" {
		return runner.Required("env_id")
	}
	switch c.GatewayMode {
	case "", envdeploy.ModePerformance, envdeploy.ModeConsistent:
	default:
		return runner.Invalid("gateway_mode", "must be performance or consistent, got %q", c.GatewayMode)
	}
	if c.TTLSeconds != nil && (*c.TTLSeconds < 60 || *c.TTLSeconds > 1209600) {
		return runner.Invalid("ttl_seconds", "must be between 60 and 1209600")
	}
	if c.EnvVersion < 0 {
		return runner.Invalid("env_version", "must be >= 1")
	}
	switch c.EnvStateType {
	case "", envdeploy.StatePostgres:
	default:
		return runner.Invalid("env_state_type", "must be %s (the state of a service_db env), got %q", envdeploy.StatePostgres, c.EnvStateType)
	}
	return nil
}

// Preflight checks that the env document exists.
func (c *Config) Preflight(ctx context.Context, s *runner.Services) []error {
	if s.Deployer == nil {
		return nil
	}
	_, isEnv := examplecatalog.Envs[path.Base(c.EnvID)]
	_, isDB := examplecatalog.ServiceDBs[path.Base(c.EnvID)]
	if (isEnv || isDB) && c.EnvVersion == 0 {
		return nil // registered from source on first deploy
	}
	e, err := s.Deployer.Stores.GetEnv(ctx, registry.Ref{ID: c.EnvID, Version: c.EnvVersion})
	if err != nil {
		return []error{fmt.Errorf("deploy_env env_id %q: %w", c.EnvID, err)}
	}
	if err := envdeploy.CheckTopology(e); err != nil {
		return []error{fmt.Errorf("deploy_env env_id %q: %w", c.EnvID, err)}
	}
	if (c.EnvStateType != "" || c.EnvStateInstanceID != "") && e.Type != envdeploy.TypeServiceDB {
		return []error{runner.Invalid("env_state_type", "env %s is a %s env; only service_db envs have a state instance", c.EnvID, e.Type)}
	}
	if e.EnvProviderType == envdeploy.ProviderServer && c.GatewayMode == envdeploy.ModeConsistent {
		return []error{runner.Invalid("gateway_mode", "consistent needs a gateway; env %s deploys with the server topology (env_provider_type server), which has none", c.EnvID)}
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	d := rc.Services().Deployer
	if d == nil {
		return fmt.Errorf("deploy_env: no env deployer configured: %w", runner.ErrNoStore)
	}
	if _, err := rc.Env(c.EnvID, ""); err == nil {
		return fmt.Errorf("env_id %q: %w", c.EnvID, runner.ErrDuplicateName)
	}
	spec, _ := c.SandboxProvider(rc)
	ttl := 7200 * time.Second
	if c.TTLSeconds != nil {
		ttl = time.Duration(*c.TTLSeconds) * time.Second
	}
	if c.EnvVersion == 0 {
		if err := examplecatalog.EnsureEnv(ctx, d, c.EnvID, spec); err != nil {
			return fmt.Errorf("deploy env %q: %w", c.EnvID, err)
		}
	}
	inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: c.EnvID, Version: c.EnvVersion},
		Sandbox: spec, TTL: ttl, GatewayMode: c.GatewayMode, EnvStateType: c.EnvStateType, EnvStateInstanceID: c.EnvStateInstanceID})
	if err != nil {
		return fmt.Errorf("deploy env %q: %w", c.EnvID, err)
	}
	envID := c.EnvID
	rc.HoldSandbox(&runner.InstanceSandbox{SandboxID: inst.SandboxID, SandboxType: inst.SandboxType, Kind: "env",
		InstanceID: inst.InstanceID, CopyOutFunc: runner.InstanceCopyOut(d, inst.SandboxType, inst.SandboxID), TerminateFunc: func(ctx context.Context) error {
			// Agents bound to the env first: on Docker they joined its
			// network, which cannot be removed while they are attached.
			for _, a := range agentsOf(rc, envID) {
				if err := rc.TerminateSandbox(ctx, a); err != nil {
					return err
				}
			}
			return d.Teardown(ctx, inst.InstanceID)
		}})
	var card any
	_ = json.Unmarshal(inst.EnvironmentCard, &card)
	var parsed protocol.EnvCard
	_ = json.Unmarshal(inst.EnvironmentCard, &parsed)
	md := map[string]any{}
	for k, v := range c.Metadata {
		md[k] = v
	}
	md["deploy_step_id"] = rc.StepID()
	topology := inst.EnvProviderType
	if topology == "" {
		topology = envdeploy.ProviderGateway
	}
	entry := map[string]any{
		"env_id": c.EnvID, "env_version": inst.EnvVersion, "env_provider_type": topology,
		"environment_card_url": inst.EnvironmentCardURL, "environment_card": card,
		"environment_card_read_at_utc": time.Now().UTC().Format(time.RFC3339),
		"mcp_url":                      inst.MCPURL, "mcp_server_name": inst.ServerName, "metadata": md,
		"instance_id": inst.InstanceID, "created_at_utc": inst.CreatedAtUTC, "expires_at_utc": inst.ExpiresAtUTC,
		"sandbox_id": inst.SandboxID, "sandbox_type": inst.SandboxType, "sandbox_ids": inst.SandboxIDs,
		// Ours: the backing servers' environment names (data plane at
		// /svc/mcp-<name>) and the URL agents in the env's group use.
		"mcp_servers": inst.MCPServers, "internal_mcp_url": inst.InternalMCPURL,
	}
	// The gateway fields exist only where there is a gateway; the server
	// topology's entry has the reference's sandbox-env shape.
	if topology == envdeploy.ProviderGateway {
		maps.Copy(entry, map[string]any{
			"gateway_url": inst.GatewayURL, "gateway_mode": inst.GatewayMode, "db_web_url": nil, "db_mcp_url": nil,
			"website_frontend_urls": map[string]string{}, "vnc_url": nil, "env_state_instance_ids": inst.EnvStateInstanceIDs,
			// A secret, kept out of the persisted and printed context.
			gwclient.KeyControlToken: inst.ControlToken,
		})
	}
	if inst.DBMCPURL != nil {
		entry["db_mcp_url"] = *inst.DBMCPURL
		entry["db_url"] = inst.DBURL // ours: the database from the host
	}
	if inst.DBWebURL != nil {
		entry["db_web_url"] = *inst.DBWebURL
	}
	if parsed.Name != "" {
		entry["environment_name"] = parsed.Name
	}
	if err := rc.AddEnvEntry(entry); err != nil {
		_ = d.Teardown(context.WithoutCancel(ctx), inst.InstanceID)
		return err
	}
	rc.Logger().Info("env deployed", "env_id", c.EnvID, "instance_id", inst.InstanceID, "gateway_url", inst.GatewayURL)
	return nil
}

// agentsOf lists the sandbox ids of the deployed agents bound to env id.
func agentsOf(rc *runner.RunContext, envID string) []string {
	var out []string
	for _, a := range rc.Agents() {
		e, err := rc.AgentEntry(a.AgentName)
		if err != nil {
			continue
		}
		ids, _ := e["env_ids"].([]any)
		for _, id := range ids {
			if id == envID && a.SandboxID != "" {
				out = append(out, a.SandboxID)
			}
		}
	}
	return out
}

var _ runner.SandboxUser = (*Config)(nil)

// SandboxProvider implements runner.SandboxUser: user_overrides.env_sandbox,
// else user_overrides.sandbox, else sandbox_type.
func (c *Config) SandboxProvider(rc *runner.RunContext) (string, bool) {
	return cmp.Or(rc.UserOverride("env_sandbox"), rc.UserOverride("sandbox"), c.SandboxType), true
}
