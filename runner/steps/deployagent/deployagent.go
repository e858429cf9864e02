// Package deployagent is the deploy_agent step: start a registered A2A
// agent through the run's envdeploy.Deployer, then configure it in the
// reference's order: one mcp-config add per bound env (the
// env's MCP URL as the agent reaches it), skill-config adds, agent-config
// {system_prompt}, then agent-config {name, description, role} filtered
// to what the card supports. The agent is recorded in deployed_agents[]
// and held among the run's sandboxes for teardown.
package deployagent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/agentenv/agentenv/internal/a2aclient"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/examplecatalog"
	"github.com/agentenv/agentenv/runner/gwclient"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/steps/internal/agentplace"
)

// Type is the step type name.
const Type = "deploy_agent"

// DefaultAgentID is the agent id when nothing names one.
const DefaultAgentID = "a2a-default"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Skill is one inline skill.
type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	SkillMD     string `json:"skill_md,omitempty"`
	Content     string `json:"content,omitempty"`
}

// Config is the step's fields.
type Config struct {
	A2AAgentID       string                 `json:"a2a_agent_id,omitempty"`
	A2AAgentVersion  int                    `json:"a2a_agent_version,omitempty"`
	EnvIDs           []string               `json:"env_ids,omitempty"`
	EnvStepID        string                 `json:"env_step_id,omitempty"`
	AgentName        string                 `json:"agent_name,omitempty"`
	AgentDescription string                 `json:"agent_description,omitempty"`
	EnvVars          map[string]string      `json:"env_vars,omitempty"`
	Skills           []Skill                `json:"skills,omitempty"`
	SystemPrompt     string                 `json:"system_prompt,omitempty"`
	DiskSizeGB       *float64               `json:"disk_size_gb,omitempty"`
	LiteLLMBaseURL   string                 `json:"litellm_base_url,omitempty"`
	SandboxType      string                 `json:"sandbox_type,omitempty"`
	TTLSeconds       *int                   `json:"ttl_seconds,omitempty"`
	CPU              *float64               `json:"cpu,omitempty"`
	MemoryMB         *int                   `json:"memory_mb,omitempty"`
	Priority         *int                   `json:"priority,omitempty"`
	NetworkPolicy    *sandbox.NetworkPolicy `json:"network_policy,omitempty"`
	Role             string                 `json:"role,omitempty"`
	SandboxName      string                 `json:"sandbox_name,omitempty"`
	// AgentConfig (ours) is sent through agent-config after the identity
	// fields: agent-specific settings such as a scripted agent's script.
	AgentConfig map[string]any `json:"agent_config,omitempty"`
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
	_ runner.Preflighter  = (*Config)(nil)
)

// Preflight checks that the step's agent is registered (or is an example
// built on first use). A per-run a2a_agent_id override is checked at run
// time.
func (c *Config) Preflight(ctx context.Context, s *runner.Services) []error {
	id := c.A2AAgentID
	if id == "" || s.Deployer == nil {
		return nil
	}
	if _, ok := examplecatalog.Agents[path.Base(id)]; ok && c.A2AAgentVersion == 0 {
		return nil
	}
	if _, err := s.Deployer.Stores.GetAgent(ctx, registry.Ref{ID: id, Version: c.A2AAgentVersion}); err != nil {
		return []error{fmt.Errorf("deploy_agent a2a_agent_id %q: %w", id, err)}
	}
	return nil
}

// EntityRefs implements runner.EntityRefser.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{{Field: "a2a_agent_id", Collection: string(registry.A2AAgents), VersionField: "a2a_agent_version"},
		{Field: "env_ids", Collection: string(registry.Envs), List: true}}
}

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.TTLSeconds != nil && (*c.TTLSeconds < 60 || *c.TTLSeconds > 1209600) {
		return runner.Invalid("ttl_seconds", "must be between 60 and 1209600")
	}
	for i, s := range c.Skills {
		if s.Name == "" || s.Description == "" || (s.SkillMD == "" && s.Content == "") {
			return runner.Invalid("skills", "skills[%d] needs name, description and skill_md (or content)", i)
		}
	}
	seen := map[string]bool{}
	for _, e := range c.EnvIDs {
		if e == "" || seen[e] {
			return runner.Invalid("env_ids", "env ids must be non-empty and unique, got %q", e)
		}
		seen[e] = true
	}
	if c.NetworkPolicy != nil {
		if err := c.NetworkPolicy.Validate(); err != nil {
			return runner.Invalid("network_policy", "%v", err)
		}
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	d := rc.Services().Deployer
	name := c.AgentName
	if name == "" {
		name = runner.DefaultAgentName
	}
	if _, hosted := runner.HostedAgentFor(ctx, name); d == nil && !hosted { // an episode's agent needs no deployer
		return fmt.Errorf("deploy_agent: no agent deployer configured: %w", runner.ErrNoStore)
	}
	if _, err := rc.Agent(name); err == nil {
		return fmt.Errorf("agent_name %q: %w", name, runner.ErrDuplicateName)
	}
	// As deploy_sandbox's providers do: a policy the sandbox cannot
	// enforce is refused, never silently dropped. No agent sandbox of this
	// build (process, docker, an episode's host) enforces one.
	if c.NetworkPolicy != nil && !c.NetworkPolicy.IsAllowAll() {
		return fmt.Errorf("deploy agent %q: network_policy mode %s: the agent sandbox cannot enforce it: %w",
			name, c.NetworkPolicy.Mode, sandbox.ErrNotSupported)
	}
	agentID := rc.UserOverride("a2a_agent_id")
	version := 0
	if agentID == "" {
		agentID, version = c.A2AAgentID, c.A2AAgentVersion
	}
	if agentID == "" {
		agentID = DefaultAgentID
	}
	type boundEnv struct {
		id, instance, name string
		controlToken       string // mints the agent's role credential
	}
	var envs []boundEnv
	var instances []string
	hostMCP := map[string]string{} // env instance -> MCP URL as this host reaches it
	for _, id := range c.EnvIDs {
		e, err := rc.EnvEntry(id, c.EnvStepID)
		if err != nil {
			return fmt.Errorf("env_ids: %w", err)
		}
		inst, _ := e["instance_id"].(string)
		name, _ := e["environment_name"].(string)
		envs = append(envs, boundEnv{id: id, instance: inst, name: name, controlToken: gwclient.ControlToken(ctx, rc, e)})
		hostMCP[inst], _ = e["mcp_url"].(string)
		instances = append(instances, inst)
	}
	spec, _ := c.SandboxProvider(rc)
	ttl := 7200 * time.Second
	if c.TTLSeconds != nil {
		ttl = time.Duration(*c.TTLSeconds) * time.Second
	}
	baseURL, apiKey := agentplace.ModelEndpoint(rc, c.LiteLLMBaseURL)
	// An episode plays this agent itself: register its in-process endpoint
	// instead of deploying a sandbox (runner/episode_override.go).
	hosted, isHosted := runner.HostedAgentFor(ctx, name)
	var ai *envdeploy.AgentInstance
	placed := c.SandboxName != "" && !isHosted
	switch {
	case isHosted:
		ai = runner.HostedAgentInstance(rc, hosted, instances)
	case placed:
		env := map[string]string{}
		for k, v := range c.EnvVars {
			env[k] = v
		}
		if baseURL != "" {
			env["LITELLM_BASE_URL"] = baseURL
		}
		if apiKey != "" {
			env["LITELLM_API_KEY"] = apiKey
		}
		var err error
		if ai, err = c.place(ctx, rc, name, agentID, version, env); err != nil {
			return fmt.Errorf("deploy agent %q on sandbox %q: %w", name, c.SandboxName, err)
		}
		ai.EnvMCPURLs = hostMCP
	default:
		if version == 0 {
			if err := examplecatalog.EnsureAgent(ctx, d, agentID); err != nil {
				return fmt.Errorf("deploy agent %q: %w", name, err)
			}
		}
		var err error
		ai, err = d.DeployAgent(ctx, envdeploy.AgentDeployRequest{Agent: registry.Ref{ID: agentID, Version: version},
			EnvInstances: instances, Sandbox: spec, TTL: ttl, EnvVars: c.EnvVars, ModelBaseURL: baseURL, ModelAPIKey: apiKey})
		if err != nil {
			return fmt.Errorf("deploy agent %q (%s): %w", name, agentID, err)
		}
		rc.HoldSandbox(&runner.InstanceSandbox{SandboxID: ai.SandboxID, SandboxType: ai.SandboxType, Kind: "agent",
			InstanceID: ai.InstanceID, CopyOutFunc: runner.InstanceCopyOut(d, ai.SandboxType, ai.SandboxID),
			TerminateFunc: func(ctx context.Context) error { return d.TeardownAgent(ctx, ai.InstanceID) }})
	}
	fail := func(err error) error {
		if !isHosted && !placed { // a placed agent ends with its sandbox
			_ = d.TeardownAgent(context.WithoutCancel(ctx), ai.InstanceID)
		}
		return fmt.Errorf("deploy agent %q: %w", name, err)
	}
	ac := a2aclient.New(ai.APIURL, &http.Client{Timeout: 180 * time.Second})
	card, err := ac.Card(ctx)
	if err != nil {
		return fail(err)
	}
	// 3. mcp-config add per env; the name only when the agent accepts one.
	sendName := acceptsName(card)
	for _, e := range envs {
		body := map[string]any{"url": ai.EnvMCPURLs[e.instance]}
		if e.controlToken != "" {
			// The agent's role credential: its role holds even if it
			// forges AgentEnv-Role (docs/security.md).
			body["headers"] = map[string]string{"Authorization": "Bearer " + protocol.RoleToken(e.controlToken, protocol.GatewayRole(c.Role))}
		}
		if sendName && e.name != "" {
			body["name"] = e.name
		}
		if _, err := configure(ctx, ac, http.MethodPost, protocol.AgentMCPConfigPath, body); err != nil {
			return fail(fmt.Errorf("mcp-config add for env %s: %w", e.id, err))
		}
	}
	// 4. skills.
	for _, s := range c.Skills {
		md := s.SkillMD
		if md == "" {
			md = s.Content
		}
		if _, err := configure(ctx, ac, http.MethodPost, protocol.AgentSkillConfigPath,
			map[string]any{"name": s.Name, "description": s.Description, "skill_md": md}); err != nil {
			return fail(fmt.Errorf("skill-config add %s: %w", s.Name, err))
		}
	}
	supported := a2aclient.Supported(card)
	// 5. system prompt (seed-substituted by the engine already).
	if c.SystemPrompt != "" && slices.Contains(supported, "system_prompt") {
		if _, err := configure(ctx, ac, http.MethodPost, protocol.AgentConfigPath, map[string]any{"system_prompt": c.SystemPrompt}); err != nil {
			return fail(fmt.Errorf("agent-config system_prompt: %w", err))
		}
	}
	// 6. identity, filtered to supported.
	ident := map[string]any{"name": name}
	if c.AgentDescription != "" {
		ident["description"] = c.AgentDescription
	}
	if c.Role != "" {
		ident["role"] = c.Role
	}
	for k := range ident {
		if !slices.Contains(supported, k) {
			delete(ident, k)
		}
	}
	if len(ident) > 0 {
		if _, err := configure(ctx, ac, http.MethodPost, protocol.AgentConfigPath, ident); err != nil {
			return fail(fmt.Errorf("agent-config identity: %w", err))
		}
	}
	if len(c.AgentConfig) > 0 && !isHosted { // settings of the real agent, not of the player
		if _, err := configure(ctx, ac, http.MethodPost, protocol.AgentConfigPath, c.AgentConfig); err != nil {
			return fail(fmt.Errorf("agent-config agent_config: %w", err))
		}
	}
	if card2, err := ac.Card(ctx); err == nil {
		card = card2 // name/description rewrite the live card
	}
	var cardv any
	_ = json.Unmarshal(card, &cardv)
	np := sandbox.NetworkPolicy{Mode: "allow_all"}
	entry := map[string]any{"agent_name": name, "api_url": ai.APIURL, "sandbox_id": ai.SandboxID, "sandbox_type": ai.SandboxType,
		"a2a_url": ai.A2AURL, "a2a_card": cardv, "instance_id": ai.InstanceID, "role": nilIfEmpty(c.Role),
		"network_policy": np, "on_host": isHosted, "a2a_agent_id": ai.AgentID, "a2a_agent_version": ai.AgentVersion,
		"env_ids": c.EnvIDs, "deploy_step_id": rc.StepID()}
	if placed {
		ai.EnvInstanceIDs = instances
		id, err := agentplace.Record(ctx, rc, ai, ttl)
		if err != nil {
			return fail(err)
		}
		entry["instance_id"] = id
		entry["sandbox_name"] = c.SandboxName
	}
	if err := rc.AddAgentEntry(entry); err != nil {
		return fail(err)
	}
	rc.Logger().Info("agent deployed", "agent_name", name, "a2a_agent_id", ai.AgentID, "api_url", ai.APIURL)
	return nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// acceptsName reports whether mcp-config add lists name among its fields.
func acceptsName(card json.RawMessage) bool {
	params := a2aclient.ExtensionParams(card, protocol.URIMCPConfig)
	var p struct {
		Methods map[string]struct {
			Request struct {
				Required []string `json:"required"`
				Optional []string `json:"optional"`
			} `json:"request"`
		} `json:"methods"`
	}
	if params == nil || json.Unmarshal(params, &p) != nil {
		return false
	}
	r := p.Methods["add"].Request
	return slices.Contains(r.Optional, "name") || slices.Contains(r.Required, "name")
}

// configure calls an extension, retrying 404 and connection errors up to
// 10 times (2 s → 15 s backoff).
func configure(ctx context.Context, ac *a2aclient.Client, method, path string, body any) ([]byte, error) {
	delay := 2 * time.Second
	var last error
	for attempt := 0; attempt < 10; attempt++ {
		b, err := ac.ExtOK(ctx, method, path, body)
		if err == nil {
			return b, nil
		}
		last = err
		var he *a2aclient.HTTPError
		retry := strings.Contains(err.Error(), a2aclient.ErrUnreachable.Error()) || (asHTTP(err, &he) && he.Status == http.StatusNotFound)
		if !retry {
			return nil, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(delay*2, 15*time.Second)
	}
	return nil, last
}

func asHTTP(err error, he **a2aclient.HTTPError) bool {
	e, ok := err.(*a2aclient.HTTPError)
	if ok {
		*he = e
	}
	return ok
}

// PlacementPort is the sandbox port an agent placed with sandbox_name
// serves A2A on: the VM sandbox must expose it.
const PlacementPort = 8000

// place starts the agent's binary on the VM-mode sandbox sandbox_name
// (listening on PlacementPort) and waits for its card. The agent lives
// and ends with the sandbox, which deploy_sandbox holds for teardown; Run
// records it in the agent-instance store (agentplace.Record).
func (c *Config) place(ctx context.Context, rc *runner.RunContext, name, agentID string, version int, env map[string]string) (*envdeploy.AgentInstance, error) {
	d := rc.Services().Deployer
	ds, sb, err := rc.Sandbox(ctx, c.SandboxName)
	if err != nil {
		return nil, fmt.Errorf("sandbox_name: %w", err)
	}
	if ds.SandboxMode != sandbox.ModeVM {
		return nil, fmt.Errorf("sandbox_name: %q is a %s-mode sandbox; agents are placed on vm-mode sandboxes", c.SandboxName, ds.SandboxMode)
	}
	if version == 0 {
		if err := examplecatalog.EnsureAgent(ctx, d, agentID); err != nil {
			return nil, err
		}
	}
	a, err := d.Stores.GetAgent(ctx, registry.Ref{ID: agentID, Version: version})
	if err != nil {
		return nil, fmt.Errorf("a2a_agent_id %q: %w", agentID, err)
	}
	all := map[string]string{}
	for k, v := range a.EnvVars {
		all[k] = v
	}
	for k, v := range env {
		all[k] = v
	}
	bin, err := d.Stores.OpenAgentBinary(ctx, a)
	if err != nil {
		return nil, err
	}
	defer bin.Close()
	u, err := agentplace.Start(ctx, sb, bin, agentplace.Options{Name: name, Port: PlacementPort, Env: all})
	if err != nil {
		return nil, err
	}
	timeout := d.ReadyTimeout
	if timeout == 0 {
		timeout = 300 * time.Second
	}
	card, err := agentplace.WaitCard(ctx, u, timeout)
	if err != nil {
		if tail := agentplace.Log(context.WithoutCancel(ctx), sb, name); tail != "" {
			err = fmt.Errorf("%w; its log tail:\n%s", err, tail)
		}
		return nil, err
	}
	return &envdeploy.AgentInstance{AgentID: a.ID, AgentVersion: a.Version, AgentName: name, Status: envdeploy.StatusDeployed,
		APIURL: u, A2AURL: u + "/", SandboxID: ds.SandboxID, SandboxType: ds.SandboxType, AgentCard: card}, nil
}

var _ runner.SandboxUser = (*Config)(nil)

// SandboxProvider implements runner.SandboxUser:
// user_overrides.agent_sandbox, else user_overrides.sandbox, else
// sandbox_type. An agent placed on an existing sandbox (sandbox_name)
// creates none.
func (c *Config) SandboxProvider(rc *runner.RunContext) (string, bool) {
	if c.SandboxName != "" {
		return "", false
	}
	return cmp.Or(rc.UserOverride("agent_sandbox"), rc.UserOverride("sandbox"), c.SandboxType), true
}
