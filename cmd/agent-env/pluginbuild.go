package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newPluginAddCmd(d *deps) *cobra.Command {
	return &cobra.Command{Use: "add MODULE[@VERSION]", Short: "Rebuild agent-env with one more Go plugin", Args: cobra.ExactArgs(1),
		RunE: func(*cobra.Command, []string) error { return errors.New("not yet") }}
}

func newPluginRemoveCmd(d *deps) *cobra.Command {
	return &cobra.Command{Use: "remove NAME", Short: "Rebuild agent-env without a Go plugin", Args: cobra.ExactArgs(1),
		RunE: func(*cobra.Command, []string) error { return errors.New("not yet") }}
}
