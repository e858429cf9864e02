package main

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/plugin/process"
)

// processPlugins are the process plugins of one command (plugin/process):
// found when the command starts, started only when the command first
// needs what they may provide, ended when it returns.
type processPlugins struct {
	found sync.Once
	specs []process.Spec

	start sync.Once
	mu    sync.Mutex
	set   *process.Set // nil until started
}

// findProcessPlugins finds the process plugins ([plugins.<name>] command
// = [...] in config.toml, agentenv-plugin-<name> on PATH) without
// starting any: starting one costs a process and its plugin/describe
// answer, which most commands (version, artifact list, ...) never need.
// Their names are pending in the plugin registry until they start (so
// their settings tables are not "configuring nothing"). Help finds none.
func (d *deps) findProcessPlugins(cmd *cobra.Command) {
	if !cmd.HasParent() || cmd.Name() == "help" || cmd.Name() == "completion" {
		return
	}
	d.proc.found.Do(func() {
		tables, dir := pluginTables(d.getenv)
		specs, errs := process.Discover(process.DiscoverOptions{Plugins: tables, ConfigDir: dir, Path: d.getenv("PATH")})
		for _, err := range errs {
			d.logger().Warn("plugin", "problem", err.Error())
		}
		d.proc.specs = specs
		names := make([]string, len(specs))
		for i, s := range specs {
			names[i] = s.Name
		}
		d.pluginRegistry().Pending(names...)
	})
}

// startProcessPlugins starts the process plugins found (once per command),
// asks each for its description and adds it to the plugin registry. It is
// called on the first need of what they may provide: a step type (any
// runner: task create's validation, run, ...), a sandbox provider or env
// backend, a config that names a sandbox provider no built-in has,
// [task_steps] impls, and plugin list/show/check. A plugin that cannot
// start is listed inactive with the reason (plugin check fails on it); one
// that claims a name another owner has is refused, and that is logged.
// ctx bounds the starting only; the processes live until the command ends.
func (d *deps) startProcessPlugins(ctx context.Context) {
	d.proc.start.Do(func() {
		if len(d.proc.specs) == 0 {
			return
		}
		set := process.Load(ctx, d.proc.specs, &process.Options{Logger: d.logger()})
		d.proc.mu.Lock()
		d.proc.set = set
		d.proc.mu.Unlock()
		reg := d.pluginRegistry()
		for _, l := range set.Plugins {
			if err := reg.Add(l.Registration()); err != nil { // a refused plugin stays listed
				d.logger().Warn("plugin refused", "error", err.Error())
			}
		}
	})
}

// closeProcessPlugins ends every plugin process the command started.
func (d *deps) closeProcessPlugins() {
	d.proc.mu.Lock()
	set := d.proc.set
	d.proc.mu.Unlock()
	if set != nil {
		_ = set.Close()
	}
}

// startedProcessPlugins is the set started, nil when none was (tests).
func (d *deps) startedProcessPlugins() *process.Set {
	d.proc.mu.Lock()
	defer d.proc.mu.Unlock()
	return d.proc.set
}

// pluginTables reads the [plugins] tables of the config file (and its
// folder, where relative plugin commands start), without validating the
// rest: the names plugins add are what makes the rest valid. A config
// that cannot be read gives no tables; the command reports it when it
// loads the configuration.
func pluginTables(getenv func(string) string) (map[string]map[string]any, string) {
	path, err := config.Discover("", getenv)
	if err != nil || path == "" {
		return nil, ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, ""
	}
	var doc struct {
		Plugins map[string]map[string]any `toml:"plugins"`
	}
	if err := toml.Unmarshal(b, &doc); err != nil {
		return nil, ""
	}
	dir, _ := filepath.Abs(filepath.Dir(path))
	return doc.Plugins, dir
}
