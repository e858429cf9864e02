package main

import (
	"context"
	"slices"
	"testing"

	"github.com/agentenv/agentenv/internal/config"
)

// The config refuses sandbox providers at load by config.SandboxProviders:
// that list must be exactly what the CLI serves, through the env and agent
// deployer and the task runner's providers and aliases.
func TestSandboxProvidersMatchConfig(t *testing.T) {
	c := newCLI(t)
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
