package config_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/registry"
)

type mapSecrets map[string]string

func (m mapSecrets) Get(_ context.Context, k string) (string, bool, error) {
	v, ok := m[k]
	return v, ok, nil
}

func TestResolved(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, `
[model]
api_key = "secret:LLM_KEY"
default = "env:AGENT_MODEL?claude-sonnet"
[model.params]
headers = { "X-Key" = "secret:HDR" }
[sandbox.providers.docker]
endpoints = ["env:EP1", "plain"]
`)
	c, err := config.Load(env{}.opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	envs := map[string]string{"EP1": "https://ep1"}
	lookup := func(k string) (string, bool) { v, ok := envs[k]; return v, ok }
	r, err := c.Resolved(context.Background(), mapSecrets{"LLM_KEY": "sk-1", "HDR": "h-1"}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if r.Model.APIKey != "sk-1" || r.Model.Default != "claude-sonnet" ||
		r.Model.Params["headers"].(map[string]any)["X-Key"] != "h-1" ||
		r.Sandbox.Providers["docker"]["endpoints"].([]any)[0] != "https://ep1" {
		t.Fatalf("resolved = %+v", r.Model)
	}
	// The original keeps the references (what Show prints).
	if c.Model.APIKey != "secret:LLM_KEY" || c.Model.Params["headers"].(map[string]any)["X-Key"] != "secret:HDR" {
		t.Fatalf("original changed: %+v", c.Model)
	}
	_, err = c.Resolved(context.Background(), mapSecrets{}, lookup)
	if !errors.Is(err, registry.ErrUnresolved) || !strings.Contains(err.Error(), "model.api_key") || !strings.Contains(err.Error(), "secret:LLM_KEY") {
		t.Fatalf("unresolvable: %v", err)
	}
}
