package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/plugin"
)

// newPluginCmd is `agent-env plugin`: list, show and check the plugins of
// this binary; add and remove rebuild it with another plugin set
// (pluginbuild.go).
func newPluginCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "List, check, add and remove plugins (step types, sandboxes, stores, commands, bundles)",
	}
	cmd.AddCommand(newPluginListCmd(d), newPluginShowCmd(d), newPluginCheckCmd(d))
	cmd.AddCommand(newPluginAddCmd(d), newPluginRemoveCmd(d)) // pluginbuild.go
	return cmd
}

// configuredPlugins loads the config (settings and [task_steps] impls
// reach the plugins) and returns the registry. A config that cannot load
// is returned as a problem, not fatal: listing plugins must still work.
func (d *deps) configuredPlugins() (*plugin.Registry, error) {
	d.startProcessPlugins(context.Background()) // every plugin is listed with its status (processplugins.go)
	_, err := d.loadConfig()
	if err != nil {
		d.configurePlugins(nil)
	}
	return d.pluginRegistry(), err
}

func newPluginListCmd(d *deps) *cobra.Command {
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the built-ins and the plugins with what they provide and their status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, cfgErr := d.configuredPlugins()
			if cfgErr != nil {
				d.logger().Warn("config", "error", cfgErr.Error())
			}
			recs := reg.All()
			if out.structured() {
				return printJSON(d, recs)
			}
			tw := tabwriter.NewWriter(d.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKIND\tVERSION\tPROVIDES\tSTATUS")
			for _, r := range recs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Kind, orDash(r.Version), r.Provides.Summary(), r.Status)
			}
			return tw.Flush()
		},
	}
	out = addOutputFlag(cmd, formatTable)
	return cmd
}

func newPluginShowCmd(d *deps) *cobra.Command {
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show one plugin: kind, version, module, contributions, settings and status",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, _ := d.configuredPlugins()
			r, ok := reg.Lookup(args[0])
			if !ok {
				return fmt.Errorf("no plugin %q (agent-env plugin list shows the installed plugins)", args[0])
			}
			if out.structured() {
				return printJSON(d, r)
			}
			printRecord(d.stdout, r)
			return nil
		},
	}
	out = addOutputFlag(cmd, formatTable)
	return cmd
}

func printRecord(w io.Writer, r plugin.Record) {
	fmt.Fprintf(w, "Name:     %s\nKind:     %s\nVersion:  %s\n", r.Name, r.Kind, orDash(r.Version))
	if r.Module != "" {
		fmt.Fprintf(w, "Module:   %s\n", r.Module)
	}
	fmt.Fprintf(w, "Status:   %s\n", r.Status)
	for _, f := range []struct {
		what  string
		names []string
	}{{"Steps", r.Provides.Steps}, {"Sandboxes", r.Provides.Sandboxes}, {"Stores", r.Provides.Stores},
		{"Commands", r.Provides.Commands}, {"Bundles", r.Provides.Bundles}, {"Disabled", r.DisabledSteps}} {
		if len(f.names) > 0 {
			fmt.Fprintf(w, "%-9s %s\n", f.what+":", strings.Join(f.names, ", "))
		}
	}
	if len(r.Settings) > 0 {
		b, _ := json.Marshal(r.Settings)
		fmt.Fprintf(w, "Settings: %s\n", b)
	}
}

func newPluginCheckCmd(d *deps) *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Load every plugin and validate every contribution; exit non-zero on any problem",
		Long: "Load every plugin and validate every contribution: names owned by no one else, well-formed step\n" +
			"types and store factories, settings accepted, [task_steps] impls resolved, and every task of every\n" +
			"plugin bundle parsed against the step types this agent-env has. Exits 1 on any problem.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, cfgErr := d.configuredPlugins()
			problems := reg.Check()
			if cfgErr != nil {
				problems = append([]error{cfgErr}, problems...)
			}
			for _, w := range reg.Warnings() {
				fmt.Fprintf(d.stdout, "warning: %s\n", w)
			}
			n := 0
			for _, r := range reg.All() {
				if r.Kind != plugin.KindBuiltin {
					n++
				}
			}
			if len(problems) == 0 {
				fmt.Fprintf(d.stdout, "%d plugin(s) checked, no problems.\n", n)
				return nil
			}
			fmt.Fprintf(d.stdout, "%d plugin(s) checked, %d problem(s):\n", n, len(problems))
			for _, p := range problems {
				fmt.Fprintf(d.stdout, "  %s\n", p)
			}
			return errPluginProblems
		},
	}
}

// errPluginProblems is plugin check's failure: the problems are printed.
var errPluginProblems = fmt.Errorf("plugin check found problems: %w", errSilent)

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
