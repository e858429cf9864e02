package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/registry/stores"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
)

// wirePlugins builds the plugin registry (the built-ins, then the Go
// plugins compiled in), adds the plugins' commands and `agent-env plugin`
// to root, and makes a refused plugin (a name clash, an invalid
// contribution) an error at start-up for every command but `plugin ...`
// and help, so that `plugin check` and `plugin remove` can still fix it.
func (d *deps) wirePlugins(root *cobra.Command) {
	root.AddCommand(newPluginCmd(d))
	names := []string{"help", "completion"}
	for _, c := range root.Commands() {
		names = append(names, c.Name())
	}
	d.plugins = d.buildPlugins(names)
	if d.bundles == nil {
		d.bundles = d.plugins.BundleFS()
	}
	root.AddCommand(d.plugins.Commands()...)
	pre := root.PersistentPreRun
	root.PersistentPreRun = nil
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		pre(cmd, args)
		d.findProcessPlugins(cmd) // started when first needed (processplugins.go)
		return d.refuseBrokenPlugins(cmd)
	}
}

// buildPlugins makes the registry; commands are the CLI's own top-level
// command names. Process plugins are added here too, before Configure.
func (d *deps) buildPlugins(commands []string) *plugin.Registry {
	reg := plugin.NewRegistry(&plugin.Options{Version: version, Commands: commands})
	set := plugin.Registered
	if d.pluginSet != nil {
		set = d.pluginSet
	}
	for _, p := range set() {
		_ = reg.Add(p) // a refused plugin stays listed; refuseBrokenPlugins reports it
	}
	return reg
}

// pluginRegistry returns the registry, building one without CLI command
// names when the command tree was not built (direct calls in tests).
func (d *deps) pluginRegistry() *plugin.Registry {
	if d.plugins == nil {
		d.plugins = d.buildPlugins(nil)
	}
	return d.plugins
}

// refuseBrokenPlugins fails every command but `plugin ...` and help when a
// plugin was refused.
func (d *deps) refuseBrokenPlugins(cmd *cobra.Command) error {
	top := cmd
	for top.HasParent() && top.Parent().HasParent() {
		top = top.Parent()
	}
	if top.Name() == "plugin" || top.Name() == "help" || !cmd.HasParent() {
		return nil
	}
	refused := d.pluginRegistry().Refusals()
	if len(refused) == 0 {
		return nil
	}
	msgs := make([]string, len(refused))
	for i, err := range refused {
		msgs[i] = err.Error()
	}
	return fmt.Errorf("%s (agent-env plugin check lists the problems; agent-env plugin remove NAME rebuilds without a plugin)",
		strings.Join(msgs, "; "))
}

// configOptions are the config loading options that make the names the
// plugins add valid in config.toml.
func (d *deps) configOptions() *config.Options {
	reg := d.pluginRegistry()
	return &config.Options{Getenv: d.getenv, SandboxProviders: reg.SandboxNames(), StoreImpls: reg.StoreImpls()}
}

// unknownSandboxName reports whether err is the config naming a sandbox
// provider that no built-in or started plugin has, while process plugins
// that may provide it have not been started.
func (d *deps) unknownSandboxName(err error) bool {
	var ce *config.Error
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Key, "sandbox.") {
		return false
	}
	return len(d.proc.specs) > 0 && d.startedProcessPlugins() == nil
}

// configurePlugins hands the plugins their [plugins.<name>] settings and
// applies [task_steps] impls, once per process; its problems are logged
// (plugin check reports them as failures). Impls may name process
// plugins' step types, so with impls set they are started first.
func (d *deps) configurePlugins(cfg *config.Config) {
	d.pluginsConfigured.Do(func() {
		reg := d.pluginRegistry()
		var settings map[string]map[string]any
		var impls []string
		if cfg != nil {
			settings, impls = cfg.Plugins, cfg.TaskSteps.Impls
		}
		if len(impls) > 0 {
			d.startProcessPlugins(context.Background())
		}
		if err := reg.Configure(settings, impls); err != nil {
			for _, p := range unjoin(err) {
				d.logger().Warn("plugin", "problem", p.Error())
			}
		}
		for _, w := range reg.Warnings() {
			d.logger().Warn("plugin", "warning", w)
		}
	})
}

// unjoin splits an errors.Join error.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// steps is the step registry of every runner the CLI makes: the built-in
// step types, then the enabled step types of the active plugins.
func (d *deps) steps() *runner.StepRegistry {
	d.startProcessPlugins(context.Background()) // their step types (processplugins.go)
	if cfg, err := d.loadConfig(); err != nil || cfg == nil {
		d.configurePlugins(nil) // the command reports the config error itself
	}
	return d.pluginRegistry().Steps()
}

// storeRegistry is the store factories: built-ins, then plugins'.
func (d *deps) storeRegistry() *stores.Registry { return d.pluginRegistry().Stores() }

// pluginProviderEnv is what a plugin sandbox provider or env backend gets.
func (d *deps) pluginProviderEnv(storeID string) *plugin.ProviderEnv {
	return &plugin.ProviderEnv{Root: filepath.Join(d.sandboxRoot(), "plugins"), StoreID: storeID, Logger: d.logger()}
}

// addPluginSandboxes adds the plugins' sandbox providers to out. A
// provider that cannot start is logged and left out: a step that asks for
// it then fails naming the provider. Construction only: ctx is not a
// command's, so New must not block.
func (d *deps) addPluginSandboxes(out map[string]runner.SandboxProvider, storeID string) {
	d.startProcessPlugins(context.Background()) // their sandbox providers (processplugins.go)
	for _, sp := range d.pluginRegistry().Sandboxes() {
		p, err := sp.New(context.Background(), d.pluginProviderEnv(storeID))
		if err != nil {
			d.logger().Warn("plugin sandbox provider unavailable", "provider", sp.Name, "error", err)
			continue
		}
		out[sp.Name] = p
	}
}

// addPluginBackends adds the plugins' env backends to out, as
// addPluginSandboxes does.
func (d *deps) addPluginBackends(out map[string]envdeploy.Backend, storeID string) {
	d.startProcessPlugins(context.Background())
	for _, b := range d.pluginRegistry().EnvBackends() {
		be, err := b.New(context.Background(), d.pluginProviderEnv(storeID))
		if err != nil {
			d.logger().Warn("plugin env backend unavailable", "backend", b.Name, "error", err)
			continue
		}
		out[b.Name] = be
	}
}
