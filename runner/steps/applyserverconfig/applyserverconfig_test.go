package applyserverconfig_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps/applyserverconfig"
)

type level struct {
	Level int `json:"level"`
}

// When the deployed entry stores no composed card, the step reads the
// server's own card live through the gateway's /svc/mcp-<server> proxy
// and calls the extension there. Here the "gateway" is a plain proxy in
// front of a real envsdk server.
func TestLiveCardThroughTheProxy(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "dial"}, &envsdk.Options{Getenv: func(string) string { return "" }})
	set := envsdk.AddSetting(s, &envsdk.Extension{URI: "urn:example:set-level/v1", Name: "set_level"}, level{}, nil)
	h, err := s.Handler()
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/svc/mcp-dial/", http.StripPrefix("/svc/mcp-dial", h))
	gw := httptest.NewServer(mux)
	defer gw.Close()

	reg := runner.NewStepRegistry()
	reg.Register(applyserverconfig.StepInfo())
	r := runner.New(&runner.Options{Steps: reg})
	task, err := r.ParseTask("t", 1, []byte(`[{"id":"cfg","type":"apply_server_config","env_id":"dial",
	  "directives":[{"environment":"*","uri":"urn:example:set-level/v1","args":{"level":3}}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.NewRunContext(map[string]any{"deployed_envs": []any{map[string]any{
		"env_id": "dial", "gateway_url": gw.URL, "mcp_servers": []any{"dial"}, "metadata": map[string]any{}}}}, nil)
	if _, err := r.Run(context.Background(), task, rc, nil); err != nil {
		t.Fatal(err)
	}
	if got := set.Get(); got.Level != 3 {
		t.Errorf("level = %d", got.Level)
	}
	changes, _ := rc.Metadata("server_config_changes")
	b, _ := json.Marshal(changes)
	if !strings.Contains(string(b), `"result":{"level":3}`) || !strings.Contains(string(b), `"service":"dial"`) {
		t.Errorf("server_config_changes = %s", b)
	}
}

// Every bad directive is reported when the task is parsed, each naming
// its place.
func TestValidate(t *testing.T) {
	reg := runner.NewStepRegistry()
	reg.Register(applyserverconfig.StepInfo())
	_, err := runner.ParseSteps(reg, []byte(`[{"id":"cfg","type":"apply_server_config",
	  "directives":[{"uri":"urn:x/v1"},{"service":"a","environment":"b","uri":"urn:x/v1"},{"service":"a"}]}]`))
	want := []string{
		`field "env_id": is required`,
		`field "directives[0]": needs service`,
		`field "directives[1]": service "a" and environment "b" disagree`,
		`field "directives[2]": needs uri`,
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%v\nlacks %q", err, w)
		}
	}
}
