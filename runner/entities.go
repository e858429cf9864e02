package runner

import (
	"fmt"
	"sort"
)

// DeployedEnv is the part of a deployed_envs[] entry the runner and steps
// look up. Deploy steps of later phases fill the rest of
// the entry; unknown fields are kept in the context document.
type DeployedEnv struct {
	EnvID              string         `json:"env_id"`
	EnvVersion         int            `json:"env_version,omitempty"`
	EnvProviderType    string         `json:"env_provider_type,omitempty"`
	EnvironmentCardURL string         `json:"environment_card_url,omitempty"`
	MCPURL             string         `json:"mcp_url,omitempty"`
	MCPServerName      string         `json:"mcp_server_name,omitempty"`
	GatewayURL         string         `json:"gateway_url,omitempty"`
	GatewayMode        string         `json:"gateway_mode,omitempty"`
	InstanceID         string         `json:"instance_id,omitempty"`
	SandboxID          string         `json:"sandbox_id,omitempty"`
	SandboxType        string         `json:"sandbox_type,omitempty"`
	CreatedAtUTC       string         `json:"created_at_utc,omitempty"`
	ExpiresAtUTC       string         `json:"expires_at_utc,omitempty"`
	Metadata           map[string]any `json:"metadata"`
}

// DeployStepID is metadata.deploy_step_id.
func (e DeployedEnv) DeployStepID() string { s, _ := e.Metadata["deploy_step_id"].(string); return s }

// DeployedAgent is the part of a deployed_agents[] entry the runner and
// steps look up.
type DeployedAgent struct {
	AgentName   string `json:"agent_name"`
	APIURL      string `json:"api_url,omitempty"`
	A2AURL      string `json:"a2a_url,omitempty"`
	SandboxID   string `json:"sandbox_id,omitempty"`
	SandboxType string `json:"sandbox_type,omitempty"`
	InstanceID  string `json:"instance_id,omitempty"`
	Role        string `json:"role,omitempty"`
	OnHost      bool   `json:"on_host,omitempty"`
}

// DefaultAgentName is the agent_name lookups use when none is given.
const DefaultAgentName = "default-agent"

// AddEnv records a deployed env; metadata.deploy_step_id is set to the
// current step. An env_id already deployed in the context is refused.
func (rc *RunContext) AddEnv(e DeployedEnv) error {
	if e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	if _, ok := e.Metadata["deploy_step_id"]; !ok {
		e.Metadata["deploy_step_id"] = rc.StepID()
	}
	for _, have := range rc.Envs() {
		if have.EnvID == e.EnvID {
			return &NameError{Kind: "env", Name: e.EnvID, Err: ErrDuplicateName}
		}
	}
	rc.appendList(KeyDeployedEnvs, e)
	return nil
}

// Envs lists deployed_envs[].
func (rc *RunContext) Envs() []DeployedEnv {
	var out []DeployedEnv
	_ = fromJSONValue(rc.list(KeyDeployedEnvs), &out)
	return out
}

// Env finds a deployed env by env_id; envStepID (metadata.deploy_step_id)
// picks one when the same env was deployed by several steps (in contexts
// merged from several runs).
func (rc *RunContext) Env(envID, envStepID string) (DeployedEnv, error) {
	var known []string
	var match []DeployedEnv
	for _, e := range rc.Envs() {
		known = append(known, e.EnvID)
		if e.EnvID == envID && (envStepID == "" || e.DeployStepID() == envStepID) {
			match = append(match, e)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		sort.Strings(known)
		name := envID
		if envStepID != "" {
			name += " (env_step_id " + envStepID + ")"
		}
		return DeployedEnv{}, &NameError{Kind: "env", Name: name, Known: known, Err: ErrUnknownName}
	}
	return DeployedEnv{}, fmt.Errorf("env %q is deployed %d times; give env_step_id", envID, len(match))
}

// AddAgent records a deployed agent; a duplicate agent_name is refused.
func (rc *RunContext) AddAgent(a DeployedAgent) error {
	if a.AgentName == "" {
		a.AgentName = DefaultAgentName
	}
	for _, have := range rc.Agents() {
		if have.AgentName == a.AgentName {
			return &NameError{Kind: "agent", Name: a.AgentName, Err: ErrDuplicateName}
		}
	}
	rc.appendList(KeyDeployedAgents, a)
	return nil
}

// Agents lists deployed_agents[].
func (rc *RunContext) Agents() []DeployedAgent {
	var out []DeployedAgent
	_ = fromJSONValue(rc.list(KeyDeployedAgents), &out)
	return out
}

// Agent finds a deployed agent by agent_name ("" = default-agent).
func (rc *RunContext) Agent(name string) (DeployedAgent, error) {
	if name == "" {
		name = DefaultAgentName
	}
	var known []string
	for _, a := range rc.Agents() {
		if a.AgentName == name {
			return a, nil
		}
		known = append(known, a.AgentName)
	}
	sort.Strings(known)
	return DeployedAgent{}, &NameError{Kind: "agent", Name: name, Known: known, Err: ErrUnknownName}
}

func (rc *RunContext) list(key string) any {
	rc.st.mu.Lock()
	defer rc.st.mu.Unlock()
	return deepCopy(rc.st.doc[key])
}

func (rc *RunContext) appendList(key string, v any) {
	jv := toJSONValue(v)
	rc.st.mu.Lock()
	defer rc.st.mu.Unlock()
	l, _ := rc.st.doc[key].([]any)
	rc.st.doc[key] = append(l, jv)
}
