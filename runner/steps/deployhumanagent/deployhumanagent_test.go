package deployhumanagent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps/deployhumanagent"
)

// Without a2a_url the configured [conversations] default_human_a2a_url
// (Services.HumanA2AURL) is the endpoint, scoped to the run, and wins
// over the environment variable; a bad configured URL is refused naming
// the config key.
func TestConfiguredHumanURL(t *testing.T) {
	t.Setenv(deployhumanagent.EnvHumanA2AURL, "http://127.0.0.1:9/from-env")
	rc := runner.NewRunContext(map[string]any{"metadata": map[string]any{"instance_id": "run-1"}},
		&runner.Services{HumanA2AURL: "http://127.0.0.1:9/from-config/"})
	if err := new(deployhumanagent.Config).Run(context.Background(), rc); err != nil {
		t.Fatal(err)
	}
	e, err := rc.AgentEntry("human_agent")
	if err != nil {
		t.Fatal(err)
	}
	if e["a2a_url"] != "http://127.0.0.1:9/from-config/instance/run-1" {
		t.Errorf("a2a_url %v", e["a2a_url"])
	}

	rc = runner.NewRunContext(nil, &runner.Services{HumanA2AURL: "ftp://x"})
	err = new(deployhumanagent.Config).Run(context.Background(), rc)
	if err == nil || !strings.Contains(err.Error(), "[conversations] default_human_a2a_url") {
		t.Errorf("bad configured URL: %v", err)
	}
}
