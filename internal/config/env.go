package config

import (
	"sort"
	"strings"
)

// envVar maps an environment variable onto a key.
type envVar struct {
	name string
	key  string // dotted key it sets ("" = Environment only)
	set  func(c *Config, v string)
}

// envVars are the environment variables, applied over the file.
var envVars = []envVar{
	{"AGENT_ENV_DOCUMENT_STORE", "stores.document.impl", func(c *Config, v string) { c.Stores.Document.Impl = v }},
	{"AGENT_ENV_OBJECT_STORE", "stores.object.impl", func(c *Config, v string) { c.Stores.Object.Impl = v }},
	{"AGENT_ENV_IMAGE_STORE", "stores.image.impl", func(c *Config, v string) { c.Stores.Image.Impl = v }},
	{"AGENT_ENV_SECRET_STORE", "stores.secret.impl", func(c *Config, v string) { c.Stores.Secret.Impl = v }},
	{"AGENT_ENV_RUNNER", "runner.impl", func(c *Config, v string) { c.Runner.Impl = v }},
	{"AGENT_ENV_TEMPORAL_ADDRESS", "runner.temporal.address", func(c *Config, v string) { c.Runner.Temporal.Address = v }},
	{"AGENT_ENV_TEMPORAL_NAMESPACE", "runner.temporal.namespace", func(c *Config, v string) { c.Runner.Temporal.Namespace = v }},
	{"AGENT_ENV_HUMAN_A2A_URL", "conversations.default_human_a2a_url", func(c *Config, v string) { c.Conversations.DefaultHumanA2AURL = v }},
	{"LITELLM_BASE_URL", "model.base_url", func(c *Config, v string) { c.Model.BaseURL = v }},
	{"LITELLM_API_KEY", "model.api_key", func(c *Config, v string) { c.Model.APIKey = v }},
	{"AGENT_ENV_LOCAL_SANDBOX_DIR", "environment.local_sandbox_dir", func(c *Config, v string) { c.Environment.LocalSandboxDir = v }},
	{"AGENT_ENV_FIXTURE_PREFIX", "environment.fixture_prefix", func(c *Config, v string) { c.Environment.FixturePrefix = v }},
	{"AGENT_ENV_SNAPSHOT_AFTER_LOAD", "environment.snapshot_after_load", func(c *Config, v string) { c.Environment.SnapshotAfterLoad = v }},
	{"XDG_STATE_HOME", "environment.xdg_state_home", func(c *Config, v string) { c.Environment.XDGStateHome = v }},
}

// otherKnownVars are AGENT_ENV_* variables read elsewhere (not warned about).
var otherKnownVars = []string{"AGENT_ENV_CONFIG"}

func (c *Config) applyEnv(getenv func(string) string, environ func() []string) {
	known := map[string]bool{}
	for _, k := range otherKnownVars {
		known[k] = true
	}
	var names []string
	for _, ev := range envVars {
		known[ev.name] = true
		names = append(names, ev.name)
		if v := getenv(ev.name); v != "" {
			ev.set(c, v)
			c.sources[ev.key] = envSourcePrefix + ev.name
		}
	}
	names = append(names, otherKnownVars...)
	var unknown []string
	for _, kv := range environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "AGENT_ENV_") && !known[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		w := Warning{Key: name, Message: "unknown environment variable " + name}
		if s := suggest(name, names); s != "" {
			w.Suggestion = s
		}
		c.Warnings = append(c.Warnings, w)
	}
}
