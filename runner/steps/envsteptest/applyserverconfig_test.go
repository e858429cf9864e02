package envsteptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner/gwclient"
	"github.com/agentenv/agentenv/runner/steps/applyserverconfig"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// TestApplyServerConfig deploys the email env (process sandbox) and
// configures its server through the gateway with the extension the
// server's card advertises: the acting user changes, so a message sent
// afterwards comes from that user. An unadvertised extension is refused,
// or skipped and recorded with tolerate_unadvertised ("*" reaching every
// server).
func TestApplyServerConfig(t *testing.T) {
	f := envsteptest.New(t)
	rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"persona","type":"apply_server_config","env_id":"email","tolerate_unadvertised":true,"directives":[
	   {"service":"email","uri":"urn:agentenv:set-acting-user/v1","args":{"user":"alice@example.com"}},
	   {"environment":"*","uri":"urn:example:set-errors/v1","args":{"tool_name":"email_search"}}]}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := rc.EnvEntry("email", "")
	if err != nil {
		t.Fatal(err)
	}
	if card, _ := entry["environment_card"].(map[string]any); card == nil || card["children_environments"] == nil {
		t.Fatalf("the deployed entry stores no composed card with children: %v", entry["environment_card"])
	}
	env, err := gwclient.ForEnv(rc, "email", "") // sends the gateway's control token
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.CallTool(context.Background(), "", "email_send_message",
		map[string]any{"to": []string{"bob@example.com"}, "subject": "Hi", "body": "Hello"})
	if err != nil {
		t.Fatal(err)
	}
	var sent struct {
		From string `json:"from"`
	}
	if err := json.Unmarshal([]byte(res.Text()), &sent); err != nil || sent.From != "alice@example.com" {
		t.Fatalf("sent message %s (err %v), want it from alice@example.com", res.Text(), err)
	}
	changes, _ := rc.Metadata("server_config_changes")
	skipped, _ := rc.Metadata("server_config_skipped")
	if got := asJSON(changes); got != `[{"args":{"user":"alice@example.com"},"env_id":"email","environment":"email",`+
		`"result":{"user":"alice@example.com"},"service":"email","step_id":"persona","uri":"urn:agentenv:set-acting-user/v1"}]` {
		t.Errorf("server_config_changes = %s", got)
	}
	if got := asJSON(skipped); got != `[{"env_id":"email","environment":"email","reason":"extension_not_advertised",`+
		`"service":"email","step_id":"persona","uri":"urn:example:set-errors/v1"}]` {
		t.Errorf("server_config_skipped = %s", got)
	}

	// Without tolerate_unadvertised the same directive fails the step,
	// naming what the server does advertise; a refused value fails it too.
	_, _, err = f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"c","type":"apply_server_config","env_id":"email","directives":[{"service":"email","uri":"urn:example:set-errors/v1"}]}]`, nil)
	if !errors.Is(err, applyserverconfig.ErrUnadvertised) || !strings.Contains(err.Error(), "urn:agentenv:set-acting-user/v1") {
		t.Errorf("unadvertised: %v", err)
	}
	_, _, err = f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"c","type":"apply_server_config","env_id":"email","directives":[{"service":"email","uri":"urn:agentenv:set-acting-user/v1","args":{"user":"nobody"}}]}]`, nil)
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") || !strings.Contains(err.Error(), `user \"nobody\" is not an email address`) {
		t.Errorf("refused value: %v", err)
	}
}
