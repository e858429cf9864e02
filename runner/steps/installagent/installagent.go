// Package installagent is the install_agent step: start a registered A2A
// agent inside something the run already owns instead of in a sandbox of
// its own. Host mode (no container_name) starts the agent on a VM-mode
// sandbox; container mode starts it inside a task container that
// run_docker_container started on that sandbox. Either way the agent is
// recorded in deployed_agents[] (on_host tells the modes apart) and lives
// as long as what it was installed into.
//
// The reference runs shell templates that the agent's card declares
// (urn:agentenv:install/v1). Our agents are static Go binaries, so the
// install is always the same and needs no declaration: copy the agent's
// binary in and start it with A2A_PORT, the model endpoint and key.
// a2a_port defaults to 8000, the port deploy_agent uses.
package installagent

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/examplecatalog"
	"github.com/agentenv/agentenv/runner/steps/dockercontainer"
	"github.com/agentenv/agentenv/runner/steps/internal/agentplace"
)

// Type is the step type name.
const Type = "install_agent"

// DefaultA2APort is the agent's port when the step names none.
const DefaultA2APort = 8000

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields (the reference's names).
type Config struct {
	SandboxName     string `json:"sandbox_name"`
	ContainerName   string `json:"container_name,omitempty"`
	A2AAgentID      string `json:"a2a_agent_id"`
	A2AAgentVersion int    `json:"a2a_agent_version,omitempty"`
	AgentName       string `json:"agent_name,omitempty"` // default-agent
	A2APort         int    `json:"a2a_port,omitempty"`   // 8000
	// WorkspaceDir is the agent's working folder in container mode (the
	// container's default when empty).
	WorkspaceDir string `json:"workspace_dir,omitempty"`
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{{Field: "a2a_agent_id", Collection: string(registry.A2AAgents), VersionField: "a2a_agent_version"}}
}

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.SandboxName == "" {
		return runner.Required("sandbox_name")
	}
	if c.A2AAgentID == "" {
		return runner.Required("a2a_agent_id")
	}
	if c.A2APort < 0 || c.A2APort > 65535 {
		return runner.Invalid("a2a_port", "port %d out of range", c.A2APort)
	}
	if c.A2AAgentVersion < 0 {
		return runner.Invalid("a2a_agent_version", "must be positive")
	}
	if c.WorkspaceDir != "" && !path.IsAbs(c.WorkspaceDir) {
		return runner.Invalid("workspace_dir", "%q must be an absolute path", c.WorkspaceDir)
	}
	if c.WorkspaceDir != "" && c.ContainerName == "" {
		return runner.Invalid("workspace_dir", "applies to a container install: give container_name")
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	name := c.AgentName
	if name == "" {
		name = runner.DefaultAgentName
	}
	if _, err := rc.Agent(name); err == nil {
		return fmt.Errorf("agent_name %q: %w", name, runner.ErrDuplicateName)
	}
	d := rc.Services().Deployer
	if d == nil {
		return fmt.Errorf("install_agent: no agent store configured: %w", runner.ErrNoStore)
	}
	agentID, version := rc.UserOverride("a2a_agent_id"), 0
	if agentID == "" {
		agentID, version = c.A2AAgentID, c.A2AAgentVersion
	}
	if version == 0 {
		if err := examplecatalog.EnsureAgent(ctx, d, agentID); err != nil {
			return fmt.Errorf("install agent %q: %w", name, err)
		}
	}
	ds, sb, err := rc.Sandbox(ctx, c.SandboxName)
	if err != nil {
		return fmt.Errorf("sandbox_name: %w", err)
	}
	a, err := d.Stores.GetAgent(ctx, registry.Ref{ID: agentID, Version: version})
	if err != nil {
		return fmt.Errorf("a2a_agent_id %q: %w", agentID, err)
	}
	bin, err := d.Stores.OpenAgentBinary(ctx, a)
	if err != nil {
		return fmt.Errorf("install agent %q: %w", name, err)
	}
	defer bin.Close()
	port := c.A2APort
	if port == 0 {
		port = DefaultA2APort
	}
	env := map[string]string{}
	for k, v := range a.EnvVars {
		env[k] = v
	}
	base, key := agentplace.ModelEndpoint(rc, "")
	if base != "" {
		env["LITELLM_BASE_URL"] = base
	}
	if key != "" {
		env["LITELLM_API_KEY"] = key
	}
	var url string
	if c.ContainerName == "" {
		url, err = agentplace.Start(ctx, sb, bin, agentplace.Options{Name: name, Port: port, Env: env})
	} else {
		url, err = dockercontainer.StartAgent(ctx, rc, c.SandboxName, c.ContainerName, bin,
			dockercontainer.AgentOptions{Name: name, Port: port, Env: env, Dir: c.WorkspaceDir})
	}
	if err != nil {
		return fmt.Errorf("install agent %q: %w", name, err)
	}
	card, err := agentplace.WaitCard(ctx, url, readyTimeout(d.ReadyTimeout))
	if err != nil {
		if c.ContainerName == "" {
			if tail := agentplace.Log(context.WithoutCancel(ctx), sb, name); tail != "" {
				err = fmt.Errorf("%w; its log tail:\n%s", err, tail)
			}
		}
		return fmt.Errorf("install agent %q: %w", name, err)
	}
	var cardv any
	_ = json.Unmarshal(card, &cardv)
	// Recorded like a deployed agent; it ends with its sandbox or container.
	inst := &envdeploy.AgentInstance{AgentID: a.ID, AgentVersion: a.Version, AgentName: name, APIURL: url, A2AURL: url + "/",
		SandboxID: ds.SandboxID, SandboxType: ds.SandboxType, AgentCard: card}
	instID, err := agentplace.Record(ctx, rc, inst, 0)
	if err != nil {
		return fmt.Errorf("install agent %q: %w", name, err)
	}
	entry := map[string]any{"agent_name": name, "api_url": url, "a2a_url": url, "a2a_card": cardv,
		"sandbox_id": ds.SandboxID, "sandbox_type": ds.SandboxType, "instance_id": instID, "role": nil,
		"network_policy": ds.NetworkPolicy, "on_host": c.ContainerName == "",
		"a2a_agent_id": a.ID, "a2a_agent_version": a.Version, "deploy_step_id": rc.StepID()}
	if c.ContainerName != "" {
		entry["container_name"] = c.ContainerName
	}
	if err := rc.AddAgentEntry(entry); err != nil {
		return err
	}
	rc.Logger().Info("agent installed", "agent_name", name, "a2a_agent_id", a.ID, "sandbox_name", c.SandboxName,
		"container_name", c.ContainerName, "api_url", url)
	return nil
}

func readyTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return 300 * time.Second
	}
	return d
}
