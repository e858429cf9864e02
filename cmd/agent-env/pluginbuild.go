package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/plugin/gobuild"
)

// buildFlags are the flags plugin add and remove share.
type buildFlags struct {
	source string // --agentenv-source
	output string // --output; "" replaces the running binary
	file   string // --plugins-file; "" is next to config.toml
}

func (f *buildFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.source, "agentenv-source", "",
		"agentenv source folder to build from (default: the plugin set's agentenv_source, $"+gobuild.SourceEnv+", the folder this agent-env was built from, or its released version)")
	cmd.Flags().StringVar(&f.output, "output", "", "write the new agent-env here instead of replacing the running one")
	cmd.Flags().StringVar(&f.file, "plugins-file", "", "the plugin set file (default: plugins.toml next to config.toml, else .agentenv/plugins.toml)")
}

func newPluginAddCmd(d *deps) *cobra.Command {
	var f buildFlags
	cmd := &cobra.Command{
		Use:   "add MODULE[@VERSION] | DIR",
		Short: "Rebuild agent-env with one more Go plugin, keeping the current binary unless the new one passes plugin check",
		Long: "Rebuild agent-env with one more Go plugin. MODULE is the import path of a package that calls\n" +
			"plugin.Register from init() (VERSION defaults to latest); a folder (./x, /x) is a local module.\n" +
			"The new binary is built with the go command from the recorded plugin set plus this one, then\n" +
			"`plugin check` runs with it; only if that passes does it replace the running agent-env (or --output),\n" +
			"and the set file records the plugin. Otherwise the current binary is kept and the reason printed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := parseModuleArg(args[0])
			if err != nil {
				return err
			}
			return d.rebuild(cmd.Context(), f, func(set *gobuild.Set) (string, error) {
				set.Put(m)
				return m.String(), nil
			}, &m)
		},
	}
	f.register(cmd)
	return cmd
}

func newPluginRemoveCmd(d *deps) *cobra.Command {
	var f buildFlags
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Rebuild agent-env without a Go plugin (NAME is the plugin's name or module)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.rebuild(cmd.Context(), f, func(set *gobuild.Set) (string, error) {
				m, ok := set.Remove(args[0])
				if !ok {
					return "", fmt.Errorf("no Go plugin %q in the plugin set (agent-env plugin list shows the plugins; only Go plugins added with plugin add can be removed)", args[0])
				}
				return m.String(), nil
			}, nil)
		},
	}
	f.register(cmd)
	return cmd
}

// parseModuleArg reads MODULE[@VERSION] or a local module folder.
func parseModuleArg(arg string) (gobuild.Module, error) {
	local := strings.HasPrefix(arg, ".") || strings.HasPrefix(arg, "/") || strings.HasPrefix(arg, "~")
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		local = true
	}
	if local {
		dir, err := filepath.Abs(expandTilde(arg))
		if err != nil {
			return gobuild.Module{}, err
		}
		path, err := gobuild.ModulePath(dir)
		if err != nil {
			return gobuild.Module{}, err
		}
		return gobuild.Module{Path: path, Dir: dir}, nil
	}
	path, version, _ := strings.Cut(arg, "@")
	if path == "" || strings.ContainsAny(path, " \t") {
		return gobuild.Module{}, fmt.Errorf("%q is not a module path: write MODULE[@VERSION] (example.com/dice@v0.1.0) or a folder", arg)
	}
	return gobuild.Module{Path: path, Version: version}, nil
}

func expandTilde(p string) string {
	if home, err := os.UserHomeDir(); err == nil && (p == "~" || strings.HasPrefix(p, "~/")) {
		return filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	return p
}

// pluginSetFile is --plugins-file, else plugins.toml next to the config
// file in use, else .agentenv/plugins.toml in the working folder.
func (d *deps) pluginSetFile(flag string) string {
	if flag != "" {
		return flag
	}
	if cfg, err := d.loadConfig(); err == nil && cfg.File != "" {
		return filepath.Join(filepath.Dir(cfg.File), gobuild.SetFileName)
	}
	return filepath.Join(".agentenv", gobuild.SetFileName)
}

// rebuild changes the plugin set with edit, builds agent-env from it,
// checks the new binary with `plugin check` and only then puts it in
// place and records the set. added, when set, is the module plugin add
// adds: it must register at least one plugin.
func (d *deps) rebuild(ctx context.Context, f buildFlags, edit func(*gobuild.Set) (string, error), added *gobuild.Module) error {
	file := d.pluginSetFile(f.file)
	set, err := gobuild.ReadSet(file)
	if err != nil {
		return err
	}
	what, err := edit(set)
	if err != nil {
		return err
	}
	target := f.output
	if target == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("cannot find the running agent-env to replace (pass --output): %w", err)
		}
		if target, err = filepath.EvalSymlinks(exe); err != nil {
			return fmt.Errorf("cannot find the running agent-env to replace (pass --output): %w", err)
		}
	}
	target, err = filepath.Abs(target)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), ".agent-env-new-*")
	if err != nil {
		return fmt.Errorf("cannot write next to %s (pass --output): %w", target, err)
	}
	tmp.Close()
	newBin := tmp.Name()
	defer os.Remove(newBin) // renamed away on success
	fmt.Fprintf(d.stdout, "Building agent-env with %d Go plugin(s) (%s)...\n", len(set.Plugins), what)
	source := f.source
	if source == "" {
		source = set.AgentenvSource
	}
	var log bytes.Buffer
	logw := &log
	src, err := gobuild.Build(ctx, &gobuild.Request{Plugins: set.Plugins, Source: source, Output: newBin, Version: version, Log: logw})
	if err != nil {
		if d.verbose {
			d.stderr.Write(log.Bytes())
		}
		return fmt.Errorf("%w (the current agent-env is unchanged)", err)
	}
	d.logger().Debug("plugin build", "source", src, "output", log.String())
	fmt.Fprintln(d.stdout, "Checking the new agent-env (plugin check)...")
	out, checkErr := runBinary(ctx, newBin, "plugin", "check")
	if checkErr != nil {
		fmt.Fprint(d.stdout, indent(out))
		return fmt.Errorf("plugin check failed with the new agent-env, so %s is unchanged and the plugin set is not recorded: %s",
			target, firstProblem(out, checkErr))
	}
	if added != nil {
		names, err := newPluginNames(ctx, newBin, added.Path)
		if err != nil {
			return fmt.Errorf("%w; %s is unchanged", err, target)
		}
		added.Names = names
		set.Put(*added)
	}
	if err := os.Chmod(newBin, 0o755); err != nil {
		return err
	}
	if err := os.Rename(newBin, target); err != nil {
		return fmt.Errorf("cannot replace %s (pass --output): %w", target, err)
	}
	if err := set.Write(file); err != nil {
		return fmt.Errorf("agent-env was rebuilt at %s, but the plugin set could not be recorded in %s: %w", target, file, err)
	}
	fmt.Fprintf(d.stdout, "Rebuilt %s with %d Go plugin(s); the plugin set is in %s.\n", target, len(set.Plugins), file)
	if added != nil {
		fmt.Fprintf(d.stdout, "Added %s: %s (agent-env plugin list shows it).\n", strings.Join(added.Names, ", "), added.Path)
	}
	return nil
}

// runBinary runs another agent-env and returns its combined output.
func runBinary(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// newPluginNames asks the new binary which plugins the module brought:
// the non-built-in plugins whose module is path, or, when plugins leave
// Module empty, the ones the running binary does not have.
func newPluginNames(ctx context.Context, bin, path string) ([]string, error) {
	out, err := exec.CommandContext(ctx, bin, "plugin", "list", "--json").Output()
	if err != nil {
		return nil, fmt.Errorf("the new agent-env cannot list its plugins: %w", err)
	}
	var recs []plugin.Record
	if err := json.Unmarshal(out, &recs); err != nil {
		return nil, fmt.Errorf("the new agent-env's plugin list is not JSON: %w", err)
	}
	var byModule, fresh []string
	for _, r := range recs {
		if r.Kind != plugin.KindGo {
			continue
		}
		if r.Module == path {
			byModule = append(byModule, r.Name)
		}
		if !slices.Contains(runningGoPlugins(), r.Name) {
			fresh = append(fresh, r.Name)
		}
	}
	if len(byModule) > 0 {
		return byModule, nil
	}
	if len(fresh) > 0 {
		return fresh, nil
	}
	return nil, errors.New(path + " registered no plugin: its package must call plugin.Register from init()")
}

// runningGoPlugins are the names of the Go plugins in this binary.
func runningGoPlugins() []string {
	var out []string
	for _, p := range plugin.Registered() {
		out = append(out, p.Name)
	}
	return out
}

// firstProblem is the first problem line of plugin check's output.
func firstProblem(out string, err error) string {
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasSuffix(l, ":") && !strings.HasPrefix(l, "warning:") {
			return l
		}
	}
	return err.Error()
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}
