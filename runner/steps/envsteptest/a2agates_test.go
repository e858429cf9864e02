package envsteptest_test

import (
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// a2aGates are the agent gates built, by type.
var a2aGates = []string{"verify_a2a_agent_card", "verify_a2a_modalities", "verify_a2a_core_protocol",
	"verify_a2a_agent_config_identity", "verify_a2a_role", "verify_a2a_system_prompt", "verify_a2a_agent_mcp",
	"verify_a2a_peer_agents", "verify_a2a_trajectory", "verify_a2a_skill_config"}

// TestA2AGatesPass deploys the scripted example agent (process sandbox)
// bound to the email env and runs every agent gate on it: each writes a
// passing verdict and its details.
func TestA2AGatesPass(t *testing.T) {
	f := envsteptest.New(t)
	js := `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"agent","type":"deploy_agent","a2a_agent_id":"scripted","env_ids":["email"]}`
	for _, typ := range a2aGates {
		js += `,{"id":"` + typ + `","type":"` + typ + `"}`
	}
	rc, _, err := f.Run(t, js+"]", nil)
	if err != nil {
		t.Fatal(err)
	}
	details, _ := rc.Metadata("validated_a2a")
	for _, typ := range a2aGates {
		gate := strings.TrimPrefix(typ, "verify_")
		v, err := rc.Verification(gate)
		if err != nil || v.Score != 1 {
			t.Errorf("%s: %+v %v", gate, v, err)
		}
		if d, _ := details.(map[string]any)[gate].(map[string]any); d == nil || d["agent_name"] != "default-agent" {
			t.Errorf("%s details: %s", gate, asJSON(d))
		}
	}
	t.Logf("details: %s", asJSON(details))
}
