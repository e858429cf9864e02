package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newSandboxCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox", Short: "Manage sandbox resources"}
	cmd.AddCommand(&cobra.Command{
		Use:   "prune",
		Short: "Remove every container, network and process group our labels mark whose owner is gone",
		Long: "Remove what a killed or finished process left behind: resources labelled agentenv.* that are\n" +
			"expired, or whose owner process is gone and whose instance is not recorded as deployed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withEnvSession(cmd.Context(), "", func(ctx context.Context, s *envSession) error {
				removed, skipped, err := s.dep.Prune(ctx)
				for _, r := range removed {
					fmt.Fprintf(d.stdout, "Removed %s\n", r)
				}
				for _, sk := range skipped {
					d.logger().Info("prune skipped a sandbox backend", "reason", sk)
				}
				fmt.Fprintf(d.stdout, "Pruned %d %s.\n", len(removed), plural(len(removed), "resource", "resources"))
				return err
			})
		},
	})
	return cmd
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339, s)
	return t
}
