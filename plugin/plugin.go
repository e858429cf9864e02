package plugin

import (
	"context"
	"io/fs"
	"log/slog"
	"sync"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
)

// Kind says how a plugin reaches agent-env.
type Kind string

const (
	// KindBuiltin is the record of what agent-env ships.
	KindBuiltin Kind = "builtin"
	// KindGo is a Go package compiled into agent-env (plugin add).
	KindGo Kind = "go"
	// KindProcess is an executable speaking JSON-RPC over stdio.
	KindProcess Kind = "process"
)

// Plugin is what a plugin contributes. Every field but Name is optional.
type Plugin struct {
	// Name identifies the plugin: lowercase letters, digits and '-',
	// starting with a letter ("dice", "acme-games"). It is the key of its
	// [plugins.<name>] settings table and the package of its bundles.
	Name string
	// Kind is KindGo when empty.
	Kind Kind
	// Version is free text shown by plugin list ("v0.3.1").
	Version string
	// Module is the Go module path of a Go plugin, or the command of a
	// process plugin (display only).
	Module string

	// Steps are the step types the plugin adds.
	Steps []runner.StepInfo
	// EnvBackends are env topologies: where `env deploy` and deploy_env
	// run an env's workloads ([sandbox] default names them).
	EnvBackends []EnvBackend
	// Sandboxes are sandbox providers for task steps (deploy_sandbox).
	Sandboxes []SandboxProvider
	// Stores are document, object, image and secret store factories.
	Stores []Store
	// Commands are top-level CLI commands (`agent-env <name> ...`); each
	// function returns a fresh command tree.
	Commands []func() *cobra.Command
	// Bundles holds one folder per bundle (<bundle>/tasks/..., as under a
	// bundle package); they install as package Name: `agent-env run
	// Name/<bundle>`.
	Bundles fs.FS

	// Configure, when set, receives the plugin's [plugins.<name>] table
	// (nil when config.toml has none) once, before any contribution is
	// used. An error makes the plugin inactive.
	Configure func(settings map[string]any) error

	// Unavailable, when set, is why the plugin cannot be used although it
	// is installed (a process plugin that did not start or describe
	// itself): it is listed inactive with this reason, contributes
	// nothing, and plugin check reports it.
	Unavailable error
}

// SandboxProvider contributes a sandbox provider for task steps. New is
// called when a command needs the providers (task run, run).
type SandboxProvider struct {
	// Name is the provider name ([sandbox] default, --sandbox).
	Name string
	New  func(ctx context.Context, env *ProviderEnv) (runner.SandboxProvider, error)
}

// EnvBackend contributes an env topology: a group runner for deployed envs
// and agents.
type EnvBackend struct {
	// Name is the backend name ([sandbox] default, env deploy --sandbox).
	Name string
	New  func(ctx context.Context, env *ProviderEnv) (envdeploy.Backend, error)
}

// ProviderEnv is what a provider or backend gets to start.
type ProviderEnv struct {
	// Root is a folder the provider may keep its state in, one per plugin
	// (<sandbox root>/plugins/<plugin name>; the provider creates it).
	Root string
	// StoreID labels resources created for this store
	// (registry.StoreLabel); prune must only touch its own.
	StoreID string
	Logger  *slog.Logger
	// Settings is the plugin's [plugins.<name>] table (nil when none).
	Settings map[string]any
}

// Store contributes a store implementation.
type Store struct {
	// Name is "store.<kind>.<impl>" ("store.document.mongo"); the impl is
	// then selectable as [stores.document] impl = "mongo".
	Name string
	// Factory is a stores.DocumentFactory, ObjectFactory, ImageFactory or
	// SecretFactory matching the kind in Name.
	Factory any
}

var (
	registeredMu sync.Mutex
	registered   []Plugin
)

// Register records a Go plugin; call it from the plugin package's init().
// It only records: names are checked when the CLI builds its Registry, so a
// bad plugin is reported by `agent-env plugin check` rather than crashing
// the binary before it can say why.
func Register(p Plugin) {
	if p.Kind == "" {
		p.Kind = KindGo
	}
	registeredMu.Lock()
	defer registeredMu.Unlock()
	registered = append(registered, p)
}

// Registered returns the plugins recorded by Register, in registration
// order.
func Registered() []Plugin {
	registeredMu.Lock()
	defer registeredMu.Unlock()
	return append([]Plugin(nil), registered...)
}
