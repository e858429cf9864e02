package config

// Config is the effective configuration. Zero values of optional fields
// mean "not set"; Defaults() fills the built-in defaults.
type Config struct {
	Stores        Stores        `toml:"stores"`
	Sandbox       Sandbox       `toml:"sandbox"`
	State         State         `toml:"state"`
	Model         Model         `toml:"model"`
	Agents        Agents        `toml:"agents"`
	Conversations Conversations `toml:"conversations"`
	Runner        Runner        `toml:"runner"`
	Envs          Impls         `toml:"envs"`
	Artifacts     Artifacts     `toml:"artifacts"`
	TaskSteps     Impls         `toml:"task_steps"`
	// Explorer is a later-phase table: accepted, kept, unused.
	Explorer map[string]any `toml:"explorer"`
	// Plugins holds each plugin's [plugins.<name>] settings table; the
	// plugin registry hands it to its plugin.
	Plugins map[string]map[string]any `toml:"plugins"`

	// Environment holds settings that only come from the environment.
	Environment Environment `toml:"-"`

	// File is the config file that was read ("" = none).
	File string `toml:"-"`
	// Warnings are the non-fatal problems found while loading.
	Warnings []Warning `toml:"-"`

	sources map[string]string // dotted key → "default" | "file" | "env NAME" | "code"

	// pluginSandboxes and pluginStores are the names plugins add
	// (Options.SandboxProviders, Options.StoreImpls).
	pluginSandboxes []string
	pluginStores    map[string][]string
}

// Stores selects the four store implementations ([stores]).
type Stores struct {
	Document StoreSpec `toml:"document"`
	Object   StoreSpec `toml:"object"`
	Image    StoreSpec `toml:"image"`
	Secret   StoreSpec `toml:"secret"`
}

// StoreSpec is `kind = "alias"` or a `[stores.<kind>]` table with impl and
// config. Config keys of the built-in implementations:
//
//	document local|sqlite: path (SQLite file), local_path (the @local file)
//	document postgres:     dsn (may be env:/secret:), schema, local_path
//	object local:          root
//	object s3|gcs|azure:   url, part_size_mib, concurrency, and credentials as
//	                       env:/secret: references (s3: access_key_id,
//	                       secret_access_key, session_token; gcs:
//	                       credentials_json; azure: account_key)
//	image local:           registry_host, repository_prefix
//	secret local:          file_path, use_env
type StoreSpec struct {
	Impl   string         `toml:"impl"`
	Config map[string]any `toml:"config"`

	fromString bool
	problems   []Warning
}

// Sandbox is [sandbox].
type Sandbox struct {
	Default      string                    `toml:"default"`
	AgentDefault string                    `toml:"agent_default"`
	Providers    map[string]map[string]any `toml:"providers"`
	Attribution  map[string]string         `toml:"attribution"`
}

// State is [state] (providers are a later phase).
type State struct {
	Providers map[string]map[string]any `toml:"providers"`
}

// Model is [model].
type Model struct {
	BaseURL string         `toml:"base_url"`
	APIKey  string         `toml:"api_key"`
	Default string         `toml:"default"`
	Roles   ModelRoles     `toml:"roles"`
	Params  map[string]any `toml:"params"`
}

// ModelRoles is [model.roles].
type ModelRoles struct {
	Agent string `toml:"agent"`
	Judge string `toml:"judge"`
}

// Agents is [agents]; it has exactly one key, and unknown keys are errors.
type Agents struct {
	DefaultA2AAgentID string `toml:"default_a2a_agent_id"`
}

// Conversations is [conversations].
type Conversations struct {
	DefaultHumanA2AURL string `toml:"default_human_a2a_url"`
}

// Runner is [runner].
type Runner struct {
	// Impl is "local" (runs in this process; the Python reference's
	// LocalRunner names are accepted as aliases) or "temporal" (runs are
	// workflows on Temporal workers, see [runner.temporal]).
	Impl     string         `toml:"impl"`
	Config   RunnerConfig   `toml:"config"`
	Temporal RunnerTemporal `toml:"temporal"`
}

// RunnerTemporal is [runner.temporal]: where runs are submitted when
// impl = "temporal", and what `agent-env worker` serves.
type RunnerTemporal struct {
	// Address is the Temporal frontend's host:port; "" means
	// 127.0.0.1:7233.
	Address string `toml:"address"`
	// Namespace; "" means "default".
	Namespace string `toml:"namespace"`
	// TaskQueue; "" means "agentenv".
	TaskQueue string `toml:"task_queue"`
	// MaxConcurrentSteps bounds the steps one worker runs at once; 0
	// means 16.
	MaxConcurrentSteps int `toml:"max_concurrent_steps"`
	// ProviderLimits caps, per sandbox provider, the steps of one worker
	// creating sandboxes of that provider at once ({docker = 4}).
	ProviderLimits map[string]int `toml:"provider_limits"`
	// HeartbeatTimeoutSeconds is how long a worker may be silent before
	// its step is retried on another; 0 means 30.
	HeartbeatTimeoutSeconds int `toml:"heartbeat_timeout_seconds"`
}

// RunnerConfig is [runner.config].
type RunnerConfig struct {
	Workers int `toml:"workers"`
}

// Impls is [envs] / [task_steps]. [task_steps] impls selects the plugin
// step types that are enabled (see the plugin package); [envs] impls is
// accepted and unused.
type Impls struct {
	Impls []string `toml:"impls"`
}

// Artifacts is [artifacts].
type Artifacts struct {
	Impls       []string          `toml:"impls"`
	TypeAliases map[string]string `toml:"type_aliases"`
}

// Environment holds the environment variables that have no file key.
type Environment struct {
	LocalSandboxDir   string // AGENT_ENV_LOCAL_SANDBOX_DIR
	FixturePrefix     string // AGENT_ENV_FIXTURE_PREFIX
	SnapshotAfterLoad string // AGENT_ENV_SNAPSHOT_AFTER_LOAD
	XDGStateHome      string // XDG_STATE_HOME
}

// Built-in defaults.
const (
	DefaultStoreImpl     = "local"
	DefaultSandbox       = "local"
	DefaultA2AAgentID    = "a2a-default"
	DefaultRunnerImpl    = "local"
	TemporalRunnerImpl   = "temporal"
	DefaultRunnerWorkers = 2
	DefaultRegistryHost  = "localhost:5000"
	DefaultJudgeModel    = "claude-sonnet-4-6"
	defaultSourceName    = "default"
	fileSourceName       = "file"
	codeSourceName       = "code"
	envSourcePrefix      = "env "
)

// Defaults returns the built-in configuration.
func Defaults() *Config {
	c := &Config{}
	c.Stores.Document.Impl = DefaultStoreImpl
	c.Stores.Object.Impl = DefaultStoreImpl
	c.Stores.Image.Impl = DefaultStoreImpl
	c.Stores.Secret.Impl = DefaultStoreImpl
	c.Sandbox.Default = DefaultSandbox
	c.Sandbox.AgentDefault = DefaultSandbox
	c.Agents.DefaultA2AAgentID = DefaultA2AAgentID
	c.Runner.Impl = DefaultRunnerImpl
	c.Runner.Config.Workers = DefaultRunnerWorkers
	c.sources = map[string]string{}
	return c
}

// Source says where the value of a dotted key ("model.api_key",
// "stores.document.impl") came from: "default", "file", "env NAME" or
// "code".
func (c *Config) Source(key string) string {
	if s, ok := c.sources[key]; ok {
		return s
	}
	return defaultSourceName
}

// Sources returns a copy of every non-default key's source.
func (c *Config) Sources() map[string]string {
	out := make(map[string]string, len(c.sources))
	for k, v := range c.sources {
		out[k] = v
	}
	return out
}

// StoreConfigString returns a string config key of a store spec ("" when
// absent or not a string).
func (s StoreSpec) StoreConfigString(key string) string {
	v, _ := s.Config[key].(string)
	return v
}

// JudgeModel is [model.roles] judge, else the built-in judge default.
func (c *Config) JudgeModel() string {
	if c.Model.Roles.Judge != "" {
		return c.Model.Roles.Judge
	}
	return DefaultJudgeModel
}

// AgentModel is [model.roles] agent, else [model] default ("" = unset).
func (c *Config) AgentModel() string {
	if c.Model.Roles.Agent != "" {
		return c.Model.Roles.Agent
	}
	return c.Model.Default
}
