package main

import (
	"github.com/spf13/cobra"
)

func newConfigCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect configuration (read-only)"}
	cmd.AddCommand(newConfigShowCmd(d), newConfigExplainCmd(d))
	return cmd
}
