package envsteptest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// deploy_agent refuses a network_policy allowlist the agent sandbox cannot
// enforce, before deploying anything, as deploy_sandbox's providers do; a
// malformed policy is refused when the task is parsed, naming the field.
func TestDeployAgentRefusesUnenforceablePolicy(t *testing.T) {
	f := envsteptest.New(t)
	rc, _, err := f.Run(t, `[{"id":"agent","type":"deploy_agent","a2a_agent_id":"scripted",
	  "network_policy":{"mode":"allowlist","allow_hosts":["example.com"]}}]`, nil)
	if !errors.Is(err, sandbox.ErrNotSupported) || !strings.Contains(err.Error(), "network_policy mode allowlist") {
		t.Fatalf("err = %v", err)
	}
	if len(rc.Agents()) != 0 || len(rc.Sandboxes()) != 0 {
		t.Errorf("something was deployed: agents %v", rc.Agents())
	}
	_, err = f.Runner.ParseTask("t", 1, []byte(`[{"id":"agent","type":"deploy_agent","network_policy":{"mode":"allowlist","allow_hosts":["*"]}}]`))
	if err == nil || !strings.Contains(err.Error(), `step 1 (id "agent"): field "network_policy"`) {
		t.Errorf("bare * policy: %v", err)
	}
	if _, _, err := f.Run(t, `[{"id":"agent","type":"deploy_agent","a2a_agent_id":"scripted","network_policy":{"mode":"allow_all"}}]`, nil); err != nil {
		t.Errorf("allow_all: %v", err)
	}
}
