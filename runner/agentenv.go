package runner

import (
	"context"
	"fmt"
	"io"
	"io/fs"

	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// This file holds what the env and agent steps (deploy_env, deploy_agent,
// prompt_agent, ...) need from the run context beyond the typed entries of
// entities.go: full context entries with every field docs/runner.md lists, and
// a sandbox.Sandbox stand-in for env and agent instances so that the run's
// teardown (and teardown_sandboxes) terminates them like any sandbox.

// AddEnvEntry records a deployed env like AddEnv, keeping every field of
// entry (environment_card, mcp_servers, ...). entry must hold env_id.
func (rc *RunContext) AddEnvEntry(entry map[string]any) error {
	e := toJSONValue(entry).(map[string]any)
	id, _ := e["env_id"].(string)
	if id == "" {
		return Required("env_id")
	}
	md, _ := e["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		e["metadata"] = md
	}
	if _, ok := md["deploy_step_id"]; !ok {
		md["deploy_step_id"] = rc.StepID()
	}
	for _, have := range rc.Envs() {
		if have.EnvID == id {
			return &NameError{Kind: "env", Name: id, Err: ErrDuplicateName}
		}
	}
	rc.appendList(KeyDeployedEnvs, e)
	return nil
}

// EnvEntry is the whole deployed_envs[] entry of an env (see Env for the
// lookup rules).
func (rc *RunContext) EnvEntry(envID, envStepID string) (map[string]any, error) {
	want, err := rc.Env(envID, envStepID)
	if err != nil {
		return nil, err
	}
	list, _ := rc.list(KeyDeployedEnvs).([]any)
	for _, x := range list {
		m, _ := x.(map[string]any)
		md, _ := m["metadata"].(map[string]any)
		step, _ := md["deploy_step_id"].(string) // absent in entries not written by deploy_env
		if m["env_id"] == want.EnvID && step == want.DeployStepID() {
			return m, nil
		}
	}
	return nil, &NameError{Kind: "env", Name: envID, Err: ErrUnknownName}
}

// AddAgentEntry records a deployed agent like AddAgent, keeping every
// field of entry (a2a_card, network_policy, ...).
func (rc *RunContext) AddAgentEntry(entry map[string]any) error {
	e := toJSONValue(entry).(map[string]any)
	name, _ := e["agent_name"].(string)
	if name == "" {
		name = DefaultAgentName
		e["agent_name"] = name
	}
	for _, have := range rc.Agents() {
		if have.AgentName == name {
			return &NameError{Kind: "agent", Name: name, Err: ErrDuplicateName}
		}
	}
	rc.appendList(KeyDeployedAgents, e)
	return nil
}

// AgentEntry is the whole deployed_agents[] entry of an agent.
func (rc *RunContext) AgentEntry(name string) (map[string]any, error) {
	a, err := rc.Agent(name)
	if err != nil {
		return nil, err
	}
	list, _ := rc.list(KeyDeployedAgents).([]any)
	for _, x := range list {
		if m, _ := x.(map[string]any); m["agent_name"] == a.AgentName {
			return m, nil
		}
	}
	return nil, &NameError{Kind: "agent", Name: name, Err: ErrUnknownName}
}

// AddPromptResponseEntry appends a full prompt_responses[] entry (every
// field); prompt_id is required, step_id defaults to the
// current step.
func (rc *RunContext) AddPromptResponseEntry(entry map[string]any) error {
	e := toJSONValue(entry).(map[string]any)
	if id, _ := e["prompt_id"].(string); id == "" {
		return Required("prompt_id")
	}
	if _, ok := e["step_id"]; !ok {
		e["step_id"] = rc.StepID()
	}
	rc.appendList(KeyPromptResponses, e)
	return nil
}

// PromptResponseEntry is the whole prompt_responses[] entry of prompt_id
// (the last one).
func (rc *RunContext) PromptResponseEntry(id string) (map[string]any, error) {
	if _, err := rc.PromptResponse(id); err != nil {
		return nil, err
	}
	list, _ := rc.list(KeyPromptResponses).([]any)
	for i := len(list) - 1; i >= 0; i-- {
		if m, _ := list[i].(map[string]any); m["prompt_id"] == id {
			return m, nil
		}
	}
	return nil, &NameError{Kind: "prompt response", Name: id, Err: ErrUnknownName}
}

// InstanceSandbox stands for an env or agent instance (a group of
// workloads run by runner/envdeploy) among the run's sandboxes: held with
// HoldSandbox, it is terminated by the run's teardown and by
// teardown_sandboxes. It has no file system and runs no commands.
type InstanceSandbox struct {
	// SandboxID is the group id recorded as sandbox_id.
	SandboxID string
	// SandboxType is the backend ("process", "docker").
	SandboxType string
	// Kind is "env" or "agent" (for messages).
	Kind string
	// InstanceID is the env or agent instance id.
	InstanceID string
	// TerminateFunc tears the instance down; it must be idempotent.
	TerminateFunc func(ctx context.Context) error
	// CopyOutFunc copies files out of the instance's work folder (see
	// envdeploy.Deployer.CopyOut); nil means it has none.
	CopyOutFunc func(ctx context.Context, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error
}

var _ sandbox.Sandbox = (*InstanceSandbox)(nil)

func (s *InstanceSandbox) ID() string                 { return s.SandboxID }
func (s *InstanceSandbox) Type() string               { return s.SandboxType }
func (s *InstanceSandbox) Mode() sandbox.Mode         { return sandbox.ModeContainer }
func (s *InstanceSandbox) TunnelURLs() map[int]string { return map[int]string{} }
func (s *InstanceSandbox) NetworkPolicy() sandbox.NetworkPolicy {
	return sandbox.NetworkPolicy{Mode: "allow_all"}
}
func (s *InstanceSandbox) Handle() sandbox.Handle {
	return sandbox.Handle{Type: s.SandboxType, ID: s.SandboxID}
}
func (s *InstanceSandbox) unsupported(what string) error {
	return fmt.Errorf("%s instance %s: %s: %w", s.Kind, s.InstanceID, what, sandbox.ErrNotSupported)
}

// Exec is not supported: env and agent workloads are reached over HTTP.
func (s *InstanceSandbox) Exec(context.Context, []string, *sandbox.ExecOptions) (sandbox.ExecResult, error) {
	return sandbox.ExecResult{}, s.unsupported("exec")
}

// WriteFile is not supported.
func (s *InstanceSandbox) WriteFile(context.Context, string, io.Reader, fs.FileMode) error {
	return s.unsupported("write file")
}

// ReadFile is not supported.
func (s *InstanceSandbox) ReadFile(context.Context, string) ([]byte, error) {
	return nil, s.unsupported("read file")
}

// Stat is not supported.
func (s *InstanceSandbox) Stat(context.Context, string) (fs.FileInfo, error) {
	return nil, s.unsupported("stat")
}

// CopyOut copies out of the instance's work folder through CopyOutFunc.
func (s *InstanceSandbox) CopyOut(ctx context.Context, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
	if s.CopyOutFunc == nil {
		return s.unsupported("copy out")
	}
	return s.CopyOutFunc(ctx, root, o, fn)
}

// InstanceCopyOut is the CopyOutFunc of an instance held in group groupID
// of backend typ.
func InstanceCopyOut(d *envdeploy.Deployer, typ, groupID string) func(context.Context, string, *sandbox.CopyOutOptions, func(sandbox.File) error) error {
	return func(ctx context.Context, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
		return d.CopyOut(ctx, typ, groupID, root, o, fn)
	}
}

// Terminate tears the instance down.
func (s *InstanceSandbox) Terminate(ctx context.Context) error {
	if s.TerminateFunc == nil {
		return nil
	}
	return s.TerminateFunc(ctx)
}

// ReattachInstances holds an InstanceSandbox for every deployed env and
// agent of the context that this process holds no handle for (a context
// loaded from a file or a stored instance, as `task run --context-json`
// resumes), so that the run's teardown removes them too. It returns how
// many it attached; without a Deployer it does nothing.
func (rc *RunContext) ReattachInstances() int {
	d := rc.st.services.Deployer
	if d == nil {
		return 0
	}
	n := 0
	attach := func(kind string, list any) {
		entries, _ := list.([]any)
		for _, x := range entries {
			m, _ := x.(map[string]any)
			sid, _ := m["sandbox_id"].(string)
			typ, _ := m["sandbox_type"].(string)
			inst, _ := m["instance_id"].(string)
			if sid == "" || inst == "" {
				continue
			}
			rc.st.mu.Lock()
			_, live := rc.st.live[sid]
			torn := rc.st.torn[sid]
			rc.st.mu.Unlock()
			if live || torn {
				continue
			}
			term := func(ctx context.Context) error { return d.Teardown(ctx, inst) }
			if kind == "agent" {
				term = func(ctx context.Context) error { return d.TeardownAgent(ctx, inst) }
			}
			rc.HoldSandbox(&InstanceSandbox{SandboxID: sid, SandboxType: typ, Kind: kind, InstanceID: inst, TerminateFunc: term,
				CopyOutFunc: InstanceCopyOut(d, typ, sid)})
			n++
		}
	}
	// Agents first: teardown visits held sandboxes in no fixed order, and
	// on Docker an env's network cannot go while agents are attached.
	attach("agent", rc.list(KeyDeployedAgents))
	attach("env", rc.list(KeyDeployedEnvs))
	return n
}
