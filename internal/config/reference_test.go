package config_test

import (
	"testing"

	"github.com/agentenv/agentenv/internal/config"
)

// The module paths users of the Python reference framework write for its
// local runner name our local runner; anything else is an error naming the
// accepted values.
func TestConfigRunnerImplReferencePaths(t *testing.T) {
	for _, impl := range []string{"local", "agent_env.runner.local_runner:LocalRunner", "agent_env.runner.local_runner.LocalRunner",
		"agent_env.runner:LocalRunner", "agent_env.runner.LocalRunner"} {
		dir := t.TempDir()
		writeConfig(t, dir, "[runner]\nimpl = \""+impl+"\"\n[runner.config]\nworkers = 3\n")
		c, err := config.Load(env{}.opts(dir))
		if err != nil {
			t.Fatalf("impl %q: %v", impl, err)
		}
		if c.Runner.Impl != "local" || c.Runner.Config.Workers != 3 || c.Source("runner.impl") != "file" {
			t.Fatalf("impl %q: runner = %+v (%s)", impl, c.Runner, c.Source("runner.impl"))
		}
	}
	// The environment variable takes the same names.
	c, err := config.Load(env{"AGENT_ENV_RUNNER": "agent_env.runner.local_runner:LocalRunner"}.opts(t.TempDir()))
	if err != nil || c.Runner.Impl != "local" {
		t.Fatalf("AGENT_ENV_RUNNER: %+v, %v", c, err)
	}
	loadErr(t, "[runner]\nimpl = \"agent_env.runner.remote_runner:RemoteRunner\"\n", "runner.impl",
		`unknown runner "agent_env.runner.remote_runner:RemoteRunner" (known: local, temporal, agent_env.runner.local_runner:LocalRunner`)
}

// A sandbox provider the CLI does not have is refused when the config
// loads, wherever the config names it, not at the first deploy.
func TestConfigUnknownSandboxProvider(t *testing.T) {
	cases := []struct{ name, body, key, want string }{
		{"default", "[sandbox]\ndefault = \"dokcer\"\n", "sandbox.default", `unknown sandbox provider "dokcer" (known: local, docker, process, kubernetes); did you mean docker?`},
		{"default chain", "[sandbox]\ndefault = \"docker, modal\"\n", "sandbox.default", `unknown sandbox provider "modal" in "docker, modal" (known: local, docker, process, kubernetes)`},
		{"agent default", "[sandbox]\nagent_default = \"e2b\"\n", "sandbox.agent_default", `unknown sandbox provider "e2b" (known: local, docker, process, kubernetes)`},
		{"provider table", "[sandbox.providers.daytona]\napi_key = \"env:K\"\n", "sandbox.providers.daytona", `unknown sandbox provider "daytona" (known: local, docker, process, kubernetes) [file]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { loadErr(t, tc.body, tc.key, tc.want) })
	}
	dir := t.TempDir()
	writeConfig(t, dir, "[sandbox]\ndefault = \"docker,process\"\nagent_default = \"process\"\n[sandbox.providers.docker]\n")
	if c, err := config.Load(env{}.opts(dir)); err != nil || c.Sandbox.Default != "docker,process" {
		t.Fatalf("known providers: %+v, %v", c, err)
	}
}
