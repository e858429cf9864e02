package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

// newConfigShowCmd prints the effective configuration with each key's
// source, secrets masked, warnings for unknown keys first.
func newConfigShowCmd(d *deps) *cobra.Command {
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Show the effective configuration and where each value comes from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := d.loadConfig()
			if err != nil {
				return err
			}
			if out.structured() {
				var buf bytes.Buffer
				if err := cfg.ShowJSON(&buf); err != nil {
					return err
				}
				return printJSON(d, json.RawMessage(buf.Bytes()))
			}
			return cfg.Show(d.stdout)
		},
	}
	out = addOutputFlag(cmd, formatTable)
	return cmd
}

func newConfigExplainCmd(d *deps) *cobra.Command {
	return &cobra.Command{
		Use:   "explain KEY",
		Short: "Show one key's value and source (e.g. model.base_url)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := d.loadConfig()
			if err != nil {
				return err
			}
			v, src, err := cfg.Explain(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(d.stdout, "%s = %s  # %s\n", args[0], v, src)
			return nil
		},
	}
}
