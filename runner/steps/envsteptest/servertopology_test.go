package envsteptest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner/gwclient"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// TestServerTopologySteps runs the env steps against "solo", an email
// server deployed with the server topology (no gateway). The data plane,
// extensions, tool checks and agents reach the server itself; the steps
// that need a gateway (triggers, the clock, role tool rules) fail with an
// error naming the step and the topology, and nothing is left deployed.
func TestServerTopologySteps(t *testing.T) {
	f := envsteptest.New(t)
	if _, err := f.Services.Artifacts.PutEnvironment(context.Background(), "solo-inbox", artifact.EnvironmentInput{
		EnvironmentName: "solo", Filename: "inbox.json", ContentType: "application/json", Body: strings.NewReader(inbox)}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := f.Run(t, `[
	 {"id":"env","type":"deploy_env","env_id":"solo","ttl_seconds":600},
	 {"id":"load","type":"load_artifact","env_id":"solo","artifact_id":"solo-inbox"},
	 {"id":"loaded","type":"env_outcome_verifier","env_id":"solo","verifier_id":"loaded","checks":[
	   {"data":"solo","extract":"messages[0].id","predicate":{"equals":"m1"}},
	   {"tool":"solo_list_messages","args":{"folder":"inbox"},"extract":"messages[0].id","predicate":{"equals":"m1"}}]},
	 {"id":"persona","type":"apply_server_config","env_id":"solo","directives":[
	   {"service":"solo","uri":"urn:agentenv:set-acting-user/v1","args":{"user":"alice@example.com"}}]},
	 {"id":"agent","type":"deploy_agent","a2a_agent_id":"scripted","env_ids":["solo"],
	  "agent_config":{"script":{"default":{"steps":[{"tool":"solo_send_message","arguments":{"to":["bob@example.com"],"subject":"Hi","body":"Hello Bob"}}],"reply":"Sent."}}}},
	 {"id":"ask","type":"prompt_agent","prompt":"say hi to bob"},
	 {"id":"sent","type":"env_outcome_verifier","env_id":"solo","verifier_id":"sent","checks":[
	   {"data":"solo","extract":{"path":"messages","match":{"folder":{"equals":"sent"}},"take":"from"},"predicate":{"equals":"alice@example.com"}}]},
	 {"id":"snap","type":"snapshot_env","env_id":"solo","snapshot_id":"solo-snap"},
	 {"id":"reset","type":"reset_env","env_id":"solo"},
	 {"id":"empty","type":"env_outcome_verifier","env_id":"solo","verifier_id":"empty","checks":[
	   {"data":"solo","extract":"messages","predicate":{"exists":false}}]},
	 {"id":"restore","type":"load_artifact","env_id":"solo","artifact_id":"solo-snap"},
	 {"id":"restored","type":"env_outcome_verifier","env_id":"solo","verifier_id":"restored","checks":[
	   {"data":"solo","extract":{"path":"messages","match":{"id":{"equals":"m1"}},"take":"id"},"predicate":{"equals":"m1"}}]}
	]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"loaded", "sent", "empty", "restored"} {
		if v, _ := rc.Verification(id); v.Score != 1 {
			t.Errorf("%s: %s", id, asJSON(v))
		}
	}
	entry, err := rc.EnvEntry("solo", "")
	if err != nil {
		t.Fatal(err)
	}
	if entry["env_provider_type"] != "server" || entry["gateway_url"] != nil || entry[gwclient.KeyControlToken] != nil {
		t.Errorf("entry %s", asJSON(entry))
	}
	if card, _ := entry["environment_card"].(map[string]any); card == nil || card["name"] != "solo" {
		t.Errorf("the entry's card is not the server's own: %s", asJSON(entry["environment_card"]))
	}

	for _, tc := range []struct{ step, want string }{
		{`{"id":"x","type":"register_env_triggers","env_id":"solo","triggers":[{"id":"a","when":{"type":"action","tool":"solo_send_message"},"actions":[{"type":"nl","instruction":"hi"}]}]}`,
			"register_env_triggers: "},
		{`{"id":"x","type":"sync_env_clock","env_id":"solo","virtual_time":"2030-01-01T00:00:00Z"}`, "sync_env_clock: "},
		{`{"id":"x","type":"modify_env_tool_access","env_id":"solo","action":"disable","role":"assistant","tools":["solo_send_message"]}`,
			"modify_env_tool_access: "},
		{`{"id":"x","type":"env_outcome_verifier","env_id":"solo","wait_for_triggers":["a"],"checks":[{"data":"solo","predicate":{"exists":true}}]}`,
			"env_outcome_verifier: "},
	} {
		rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"solo","ttl_seconds":600},`+tc.step+`]`, nil)
		if !errors.Is(err, gwclient.ErrNoGateway) || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "server topology") || strings.Contains(err.Error(), "404") {
			t.Errorf("%s: %v", tc.want, err)
		}
		if _, err := f.Runner.TeardownRun(context.Background(), rc, 0); err != nil {
			t.Errorf("teardown: %v", err)
		}
	}
	// Options only a gateway honours are refused at preflight, naming the
	// field, before anything is deployed.
	rc, _, err = f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"solo","ttl_seconds":600,"gateway_mode":"consistent"}]`, nil)
	if err == nil || !strings.Contains(err.Error(), "gateway_mode") || !strings.Contains(err.Error(), "server topology") {
		t.Errorf("consistent gateway mode: %v", err)
	}
	if len(rc.Envs()) != 0 {
		t.Errorf("deployed despite the refusal: %v", rc.Envs())
	}
}
