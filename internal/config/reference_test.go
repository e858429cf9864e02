package config_test

import (
	"errors"
	"strings"
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
	dir := t.TempDir()
	p := writeConfig(t, dir, "[runner]\nimpl = \"agent_env.runner.remote_runner:RemoteRunner\"\n")
	_, err = config.Load(env{}.opts(dir))
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Key != "runner.impl" || !strings.Contains(err.Error(), p) ||
		!strings.Contains(err.Error(), "known: local, agent_env.runner.local_runner:LocalRunner") {
		t.Fatalf("unknown runner: %v", err)
	}
}
