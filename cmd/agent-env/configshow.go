package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
)

// newConfigShowCmd prints where configuration and state come from.
//
// Until the registry's config loader is available to commands this shows
// the discovered file (runner.md §12 discovery) and the local paths, not
// the merged key values.
func newConfigShowCmd(d *deps) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Show the configuration file in use and the local state paths",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, err := discoverConfig(d.getenv("AGENT_ENV_CONFIG"))
			if err != nil {
				return err
			}
			root, err := registry.StateRoot()
			if err != nil {
				return err
			}
			out := map[string]string{
				"config_file":       file,
				"state_root":        root,
				"document_store":    filepath.Join(root, "document_store", "documents.db"),
				"object_store":      filepath.Join(root, "object_store"),
				"local_sandbox_dir": d.sandboxRoot(),
			}
			if asJSON {
				b, _ := json.MarshalIndent(out, "", "  ")
				fmt.Fprintln(d.stdout, string(b))
				return nil
			}
			if file == "" {
				file = "none (built-in defaults)"
			}
			fmt.Fprintf(d.stdout, "Config file: %s\n", file)
			fmt.Fprintf(d.stdout, "State root: %s\n", root)
			fmt.Fprintf(d.stdout, "Document store: %s\n", out["document_store"])
			fmt.Fprintf(d.stdout, "Object store: %s\n", out["object_store"])
			fmt.Fprintf(d.stdout, "Local sandboxes: %s\n", out["local_sandbox_dir"])
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// discoverConfig applies runner.md §12: AGENT_ENV_CONFIG (must exist),
// else the nearest .agentenv/config.toml walking up from the working
// folder, else none.
func discoverConfig(env string) (string, error) {
	if env != "" {
		if _, err := os.Stat(env); err != nil {
			return "", fmt.Errorf("AGENT_ENV_CONFIG=%s: %w", env, err)
		}
		return env, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", nil
	}
	for {
		p := filepath.Join(dir, ".agentenv", "config.toml")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}
