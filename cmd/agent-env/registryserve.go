package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/ociregistry"
)

func newRegistryCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "registry", Short: "The local OCI registry"}
	var addr, dir string
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve an OCI registry in-process until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				root, err := registry.StateRoot()
				if err != nil {
					return err
				}
				dir = filepath.Join(root, "oci_registry")
			}
			s, err := ociregistry.Start(addr, dir, &ociregistry.Options{Logger: d.logger()})
			if err != nil {
				return err
			}
			fmt.Fprintf(d.stdout, "OCI registry listening on %s (storage %s). Press Ctrl-C to stop.\n", s.Addr(), dir)
			<-cmd.Context().Done()
			if err := s.Close(context.WithoutCancel(cmd.Context())); err != nil {
				return err
			}
			fmt.Fprintln(d.stdout, "Registry stopped.")
			return nil
		},
	}
	serve.Flags().StringVar(&addr, "addr", ociregistry.DefaultAddr, "listen address")
	serve.Flags().StringVar(&dir, "dir", "", "storage folder (default <state root>/oci_registry)")
	cmd.AddCommand(serve)
	return cmd
}
