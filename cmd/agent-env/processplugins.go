package main

import (
	"os"
	"path/filepath"
	"sync"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/plugin/process"
)

// processPlugins are the process plugins of one command (plugin/process):
// started when the command starts, ended when it returns.
type processPlugins struct {
	once sync.Once
	set  *process.Set
}

// addProcessPlugins finds, starts and describes the process plugins
// ([plugins.<name>] command = [...] in config.toml, agentenv-plugin-<name>
// on PATH) and adds each to the plugin registry, before the configuration
// is validated against the names plugins add. A plugin that cannot start
// is listed inactive with the reason (plugin check fails on it). Help
// starts none.
func (d *deps) addProcessPlugins(cmd *cobra.Command) {
	if !cmd.HasParent() || cmd.Name() == "help" || cmd.Name() == "completion" {
		return
	}
	d.proc.once.Do(func() {
		tables, dir := pluginTables(d.getenv)
		specs, errs := process.Discover(process.DiscoverOptions{Plugins: tables, ConfigDir: dir, Path: d.getenv("PATH")})
		for _, err := range errs {
			d.logger().Warn("plugin", "problem", err.Error())
		}
		d.proc.set = process.Load(cmd.Context(), specs, &process.Options{Logger: d.logger()})
		reg := d.pluginRegistry()
		for _, l := range d.proc.set.Plugins {
			_ = reg.Add(l.Registration()) // a refused plugin stays listed; refuseBrokenPlugins reports it
		}
	})
}

// closeProcessPlugins ends every plugin process the command started.
func (d *deps) closeProcessPlugins() {
	if d.proc.set != nil {
		_ = d.proc.set.Close()
	}
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
