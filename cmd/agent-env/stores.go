package main

import (
	"context"
	"time"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/stores"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundle"
	"github.com/agentenv/agentenv/runner/sandbox/local"
)

// storeSet is the stores a command works with: the registry's configured
// set plus the [sandbox] default.
type storeSet struct {
	*stores.Set
	defaultSandbox string
}

// openConfiguredStores opens the stores of cfg ([stores] in config.toml;
// @local ids are routed to the local SQLite store) with the factories of
// reg (built-ins and plugins').
func openConfiguredStores(ctx context.Context, cfg *config.Config, reg *stores.Registry) (*storeSet, error) {
	set, err := stores.Open(ctx, cfg, &stores.Options{Registry: reg})
	if err != nil {
		return nil, err
	}
	return &storeSet{Set: set}, nil
}

// withStores runs fn with the configured stores open and closes them when
// fn returns: the shared body of the commands that only read or write the
// registry, so none of them can leak a store.
func (d *deps) withStores(ctx context.Context, fn func(ctx context.Context, st *storeSet) error) error {
	st, err := d.openStores(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(ctx, st)
}

// docsFor routes an id to its document store.
func (s *storeSet) docsFor(id string) registry.DocumentStore { return s.DocumentsFor(id) }

// bundleStores is where bundles (always @local ids) are written.
func (s *storeSet) bundleStores() bundle.Stores {
	return bundle.Stores{Documents: s.Local, Artifacts: s.ArtifactsFor(registry.LocalPrefix), LockDir: s.LocksDir()}
}

// services builds the runner services of a command for entities owned by
// id's store. Expired local sandboxes left by earlier runs are reaped first
// (best effort).
func (d *deps) services(ctx context.Context, st *storeSet, id string) *runner.Services {
	lp := local.New(d.sandboxRoot(), &local.Options{Logger: d.logger()})
	if reaped, err := lp.Reap(ctx, time.Now()); len(reaped) > 0 || err != nil {
		d.logger().Info("reaped expired local sandboxes", "sandbox_ids", reaped, "error", err)
	}
	return &runner.Services{
		Documents:      st.DocumentsFor(id),
		Objects:        st.Objects,
		Artifacts:      st.ArtifactsFor(id),
		Sandboxes:      d.sandboxProviders(lp, st), // local + docker (sandboxdeps.go)
		DefaultSandbox: st.defaultSandbox,
		SandboxAliases: map[string]string{"process": lp.Type()}, // run hello --sandbox process
		Deployer:       d.runDeployer(st, id),                   // deploy_env, deploy_agent (sandboxdeps.go)
		HumanA2AURL:    d.humanA2AURL(),
		Logger:         d.logger(),
	}
}

// humanA2AURL is [conversations] default_human_a2a_url (the environment
// variable already applied by the config loader); "" when the config
// does not load, so the step falls back to the variable itself.
func (d *deps) humanA2AURL() string {
	cfg, err := d.loadConfig()
	if err != nil {
		return ""
	}
	return cfg.Conversations.DefaultHumanA2AURL
}
