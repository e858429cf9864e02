package main

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/agentenv/agentenv/internal/config"
)

// The config refuses sandbox providers at load by config.SandboxProviders:
// that list must be exactly what the CLI serves, through the env and agent
// deployer and the task runner's providers and aliases.
func TestSandboxProvidersMatchConfig(t *testing.T) {
	c := newCLI(t)
	// The kubernetes provider is built only when the config names it (it
	// needs a cluster's address), so name one: nothing dials it here.
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeFile(t, kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]
current-context: x
`)
	cfg := filepath.Join(dir, "config.toml")
	writeFile(t, cfg, "[sandbox.providers.kubernetes.config]\nkubeconfig = "+strconv.Quote(kubeconfig)+"\n")
	t.Setenv("AGENT_ENV_CONFIG", cfg)
	d := c.deps(newSyncBuffer(), newSyncBuffer())
	ctx := context.Background()
	st, err := d.openStores(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := d.openEnvSession(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.docker == nil {
		t.Skip("no Docker engine: the docker provider is not wired")
	}
	served := map[string]bool{}
	for name := range s.dep.Backends {
		served[name] = true
	}
	svc := d.services(ctx, st, "hello")
	for name := range svc.Sandboxes {
		served[name] = true
	}
	for name := range svc.SandboxAliases {
		served[name] = true
	}
	var got []string
	for name := range served {
		got = append(got, name)
	}
	want := config.SandboxProviders()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the CLI serves %v, the config accepts %v", got, want)
	}
}
