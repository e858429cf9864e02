package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/internal/jsonvalue"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
)

// newEnvCreateCLICmd is `env mcp-server create-cli`: deploy the env, run
// build_mcp_cli on it (the same step a task would run), tear the env down
// and print the stored cli artifact. Optionally the binary is written out.
func newEnvCreateCLICmd(d *deps) *cobra.Command {
	var id, sandbox, cliID, command, role, outDir, desc string
	var version int
	cmd := &cobra.Command{
		Use:   "create-cli",
		Short: "Deploy an env, read its live tools and store a cli artifact: a static binary with one subcommand per tool",
		Long: "Deploy the env, read its live tools through the gateway (as --role), and store a cli artifact: a\n" +
			"static Go binary in which each tool is a subcommand and each parameter a flag. The binary calls the\n" +
			"tools through a deployed copy of the env: --url or AGENTENV_GATEWAY_URL names its gateway, and\n" +
			"AGENTENV_TOKEN carries the role credential (`agent-env env role-token --role cli`). Building needs\n" +
			"the go command; the env is torn down afterwards.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := versionRef(id, version); err != nil {
				return err
			}
			step := map[string]any{"id": "cli", "type": "build_mcp_cli", "env_id": id, "env_step_id": "env"}
			for k, v := range map[string]string{"cli_id": cliID, "command_name": command, "role": role, "description": desc} {
				if v != "" {
					step[k] = v
				}
			}
			dep := map[string]any{"id": "env", "type": "deploy_env", "env_id": id, "ttl_seconds": 900}
			if version > 0 {
				dep["env_version"] = version
			}
			if sandbox != "" {
				dep["sandbox_type"] = sandbox
			}
			js, err := json.Marshal([]any{dep, step})
			if err != nil {
				return err
			}
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				r := runner.New(&runner.Options{Steps: d.steps(), Logger: d.logger()})
				t, err := r.ParseTask("create-cli-"+id, 1, js)
				if err != nil {
					return err
				}
				rc := runner.NewRunContext(map[string]any{"metadata": map[string]any{"runner": "cli"}}, d.services(ctx, st, id))
				defer func() {
					// Teardown on every path, with its own context: the
					// command's may be the one cancelled.
					tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
					defer cancel()
					_, _ = r.TeardownRun(tctx, rc, 0)
				}()
				fmt.Fprintf(d.stdout, "Deploying env %s and reading its tools...\n", id)
				if _, err := r.Run(ctx, t, rc, nil); err != nil {
					return err
				}
				built, _ := rc.Metadata("built_mcp_clis")
				b, _ := built.(map[string]any)["cli"].(map[string]any)
				if b == nil {
					return fmt.Errorf("create-cli: build_mcp_cli recorded nothing")
				}
				n := 0
				switch l := b["tools"].(type) {
				case []string:
					n = len(l)
				case []any:
					n = len(l)
				}
				fmt.Fprintf(d.stdout, "Created cli: id=%v version=%v command_name=%v tools=%d\n", b["cli_artifact_id"], b["version"], b["command_name"], n)
				if outDir != "" {
					c, _, err := st.ArtifactsFor(id).WriteCLI(ctx, registry.Ref{ID: fmt.Sprint(b["cli_artifact_id"]), Version: jsonvalue.Int(b["version"])}, outDir)
					if err != nil {
						return fmt.Errorf("--output-dir: %w", err)
					}
					fmt.Fprintf(d.stdout, "Wrote %s/%s\n", outDir, c.Entrypoint)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	idArg(cmd, &id, idSpec{noun: "env", complete: d.completeDocs(registry.Envs)})
	f.IntVar(&version, "version", 0, "env version (default: latest)")
	f.StringVar(&sandbox, "sandbox", "", "sandbox provider spec for the env (default: config)")
	f.StringVar(&cliID, "cli-id", "", "cli artifact id (default: <env>-cli)")
	f.StringVar(&command, "command-name", "", "the binary's name on PATH (default: <env>-cli)")
	f.StringVar(&role, "role", "", "role the tools are read and called as (default: cli)")
	f.StringVar(&desc, "description", "", "artifact description")
	f.StringVar(&outDir, "output-dir", "", "also write the binary into this folder")
	return cmd
}
