package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/steps/putgate"
)

func newEnvCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "env", Short: "Register, deploy and tear down environments"}
	ms := &cobra.Command{Use: "mcp-server", Short: "MCP server envs"}
	ms.AddCommand(newEnvMCPServerPutCmd(d), newEnvCreateCLICmd(d))
	gw := &cobra.Command{Use: "gateway", Short: "The gateway env"}
	gw.AddCommand(newEnvGatewayPutCmd(d))
	multi := &cobra.Command{Use: "multi", Short: "Several MCP servers (and websites) behind one gateway"}
	multi.AddCommand(newEnvMultiPutCmd(d))
	sdb := &cobra.Command{Use: "service-db", Short: "A PostgreSQL database behind a db MCP server"}
	sdb.AddCommand(newEnvServiceDBPutCmd(d))
	cmd.AddCommand(newEnvWebsiteCmds(d)...)
	cmd.AddCommand(ms, gw, multi, sdb, newEnvDeployCmd(d), newGetInstanceCmd(d, envInstances), newTeardownCmd(d, envInstances), newEnvRoleTokenCmd(d))
	return cmd
}

// imageFlags are the source flags of every put.
type imageFlags struct {
	in envdeploy.ImageInput
}

func (f *imageFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.in.Dockerfile, "dockerfile", "", "build with the local engine from this Dockerfile (must not need a pull)")
	fl.StringVar(&f.in.Context, "context", "", "build context folder (default: the Dockerfile's folder)")
	fl.StringVar(&f.in.GoPackage, "go-package", "", "build this Go package offline into a static binary and a FROM scratch image")
	fl.StringVar(&f.in.Binary, "binary", "", "use this prebuilt static Linux binary as with --go-package")
	fl.StringVar(&f.in.ImageRef, "image-ref", "", "register an image the engine already holds")
	fl.StringVar(&f.in.Platform, "platform", "", "linux/amd64 or linux/arm64 (recorded)")
}

func newEnvMCPServerPutCmd(d *deps) *cobra.Command {
	var img imageFlags
	var in envdeploy.MCPServerInput
	var meta []string
	var validate bool
	cmd := &cobra.Command{
		Use:   "put",
		Short: "Build and register an MCP server env (--go-package P | --dockerfile F [--context D] | --image-ref R)",
		Long: "Build and register an MCP server env.\n\n" +
			"--validate first deploys the env on throwaway stores as local processes, runs the release gates\n" +
			"(verify_env_card, verify_env_core_protocol, verify_mcp_tool_schema, validation_gate_aggregator,\n" +
			"and verify_spec_conformance, reported but not enforced) and tears it down; a failed gate refuses\n" +
			"the put, naming each failed gate, and nothing is stored.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if in.Metadata, err = parseKV("metadata", meta); err != nil {
				return err
			}
			in.Image = img.in
			if validate {
				rep, err := putgate.ValidateMCPServer(cmd.Context(), in, nil)
				if err != nil {
					return err
				}
				if !rep.Passed {
					return rep
				}
				fmt.Fprintln(d.stdout, rep.String())
			}
			return d.withEnvSession(cmd.Context(), in.ID, func(ctx context.Context, s *envSession) error {
				_, err := s.put.PutMCPServer(ctx, in)
				return err
			})
		},
	}
	img.add(cmd)
	f := cmd.Flags()
	idArg(cmd, &in.ID, idSpec{noun: "env", complete: d.completeDocs(registry.Envs)})
	f.StringVar(&in.EnvironmentName, "environment-name", "", "environment name (default: derived from the source's card)")
	f.StringVar(&in.EnvProviderType, "env-provider-type", "gateway", "gateway, or server: deploy the server alone, without a gateway (no triggers, clock or role rules)")
	f.StringVar(&in.Description, "description", "", "description")
	f.StringArrayVar(&meta, "metadata", nil, "k=v metadata (repeatable)")
	f.BoolVar(&validate, "validate", false, "run the env release gates first (needs --go-package or --binary); a failed gate stores nothing")
	return cmd
}

func newEnvGatewayPutCmd(d *deps) *cobra.Command {
	var img imageFlags
	var id string
	cmd := &cobra.Command{
		Use:   "put",
		Short: "Register the gateway image (default: built from the agentenv-gateway binary or source, FROM scratch)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withEnvSession(cmd.Context(), id, func(ctx context.Context, s *envSession) error {
				in := img.in
				if in.GoPackage == "" && in.Binary == "" && in.Dockerfile == "" && in.ImageRef == "" {
					src, err := envdeploy.GatewaySource(ctx)
					if err != nil {
						return err
					}
					in = src
				}
				_, err := s.put.PutGateway(ctx, id, in)
				return err
			})
		},
	}
	img.add(cmd)
	idArg(cmd, &id, idSpec{noun: "env", optional: true, def: envdeploy.DefaultGatewayID, complete: d.completeDocs(registry.Envs)})
	return cmd
}

func newEnvMultiPutCmd(d *deps) *cobra.Command {
	var in envdeploy.MultiInput
	cmd := &cobra.Command{
		Use:   "put",
		Short: "Register several MCP server envs behind one gateway",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withEnvSession(cmd.Context(), in.ID, func(ctx context.Context, s *envSession) error {
				_, err := s.put.PutMulti(ctx, in)
				return err
			})
		},
	}
	f := cmd.Flags()
	idArg(cmd, &in.ID, idSpec{noun: "env", complete: d.completeDocs(registry.Envs)})
	f.StringArrayVar(&in.MCPServers, "mcp-server", nil, "member env id[:version] (repeatable)")
	f.StringArrayVar(&in.Websites, "website", nil, "website env id[:version] (repeatable; the website-browser env gives the gateway its browser tools)")
	f.StringVar(&in.Name, "name", "", "fixed gateway name (default: env + 4 random digits per deploy)")
	f.StringVar(&in.EnvProviderType, "env-provider-type", "gateway", "gateway (a multi env always deploys behind one)")
	f.StringVar(&in.Description, "description", "", "description")
	return cmd
}

func newEnvServiceDBPutCmd(d *deps) *cobra.Command {
	var in envdeploy.ServiceDBInput
	cmd := &cobra.Command{
		Use:   "put",
		Short: "Register a service_db env: a PostgreSQL per instance and a db MCP server (default: both built from this source tree)",
		Long: "Register a service_db env. Each deploy runs a PostgreSQL database (the state instance, recorded in\n" +
			"env_state_instances) and a db MCP server over it (list tables, describe, read-only query; execute for\n" +
			"--write-role roles) behind the gateway. load_artifact loads SQL dumps into it; snapshot_env exports one.\n" +
			"The process sandbox runs the host's Debian PostgreSQL binaries; Docker needs --db-host-closure or --db-image-ref (docs/envtypes.md).",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withEnvSession(cmd.Context(), in.ID, func(ctx context.Context, s *envSession) error {
				_, err := s.put.PutServiceDB(ctx, in)
				return err
			})
		},
	}
	f := cmd.Flags()
	idArg(cmd, &in.ID, idSpec{noun: "env", complete: d.completeDocs(registry.Envs)})
	f.StringVar(&in.EnvironmentName, "environment-name", "", "name of the db MCP server (default db)")
	f.StringVar(&in.DBMCP.GoPackage, "db-mcp-go-package", "", "db MCP server Go package (default: the example db server)")
	f.StringVar(&in.DBMCP.Binary, "db-mcp-binary", "", "prebuilt static db MCP server binary")
	f.StringVar(&in.DBMCP.ImageRef, "db-mcp-image-ref", "", "db MCP server image the engine holds")
	f.StringVar(&in.DB.GoPackage, "db-go-package", "", "database workload Go package (default ./images/postgres/agentenv-postgres)")
	f.StringVar(&in.DB.Binary, "db-binary", "", "prebuilt static database workload binary (agentenv-postgres)")
	f.StringVar(&in.DB.ImageRef, "db-image-ref", "", "PostgreSQL image the engine holds (Docker): serves on $PGPORT, trusted connections")
	f.BoolVar(&in.DBHostClosure, "db-host-closure", false, "put this host's PostgreSQL and its library closure into the database image (Docker without pulls)")
	f.StringArrayVar(&in.WriteRoles, "write-role", nil, "role the db MCP server lets write (repeatable; * = every caller; default none: read-only)")
	f.StringVar(&in.Description, "description", "", "description")
	return cmd
}

func newEnvDeployCmd(d *deps) *cobra.Command {
	var out *outputFlag
	var id, mode, gateway, stateType, stateID string
	var sandbox *sandboxFlags
	var version, ttl int
	cmd := &cobra.Command{
		Use:   "deploy",
		Short: "Deploy an env (behind a gateway, or alone with env_provider_type server) and print its URLs",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := versionRef(id, version)
			if err != nil {
				return err
			}
			return d.withEnvSession(cmd.Context(), id, func(ctx context.Context, s *envSession) error {
				w := d.stdout
				if out.structured() {
					w = d.stderr
				}
				shown := sandbox.envSpec()
				if shown == "" {
					shown = "config default"
				}
				fmt.Fprintf(w, "Sandbox backend: %s\n", shown)
				v := "latest"
				if version > 0 {
					v = fmt.Sprint(version)
				}
				fmt.Fprintf(w, "Fetching env: id=%s version=%s...\n", id, v)
				inst, err := s.dep.Deploy(ctx, envdeploy.DeployRequest{Env: ref, Sandbox: sandbox.envSpec(),
					TTL: ttlFlag(ttl), GatewayMode: mode, GatewayID: gateway, EnvStateType: stateType, EnvStateInstanceID: stateID})
				if err != nil {
					return err
				}
				if out.structured() {
					return printJSON(d, masked(inst))
				}
				fmt.Fprintln(d.stdout, "Deployed!")
				fmt.Fprintf(d.stdout, "Instance ID: %s\n", inst.InstanceID)
				fmt.Fprintf(d.stdout, "Env MCP Url: %s\n", inst.MCPURL)
				if inst.EnvProviderType == envdeploy.ProviderServer {
					fmt.Fprintf(d.stdout, "Env Card Url: %s\n", inst.EnvironmentCardURL)
					fmt.Fprintln(d.stdout, "Env Gateway Url: none (env_provider_type server)")
				} else {
					fmt.Fprintf(d.stdout, "Env Gateway Url: %s\n", inst.GatewayURL)
				}
				if inst.DBURL != "" {
					fmt.Fprintf(d.stdout, "DB URL: %s\n", inst.DBURL)
					fmt.Fprintf(d.stdout, "DB MCP Url: %s\n", *inst.DBMCPURL)
					if inst.DBWebURL != nil {
						fmt.Fprintf(d.stdout, "Env DB Web Url: %s\n", *inst.DBWebURL)
					}
					fmt.Fprintf(d.stdout, "Env State Instance ID: %s\n", strings.Join(inst.EnvStateInstanceIDs, ", "))
				}
				for _, name := range slices.Sorted(maps.Keys(inst.WebsiteFrontendURLs)) {
					fmt.Fprintf(d.stdout, "Website Frontend (%s): %s\n", name, inst.WebsiteFrontendURLs[name])
				}
				fmt.Fprintf(d.stdout, "Expires At (UTC): %s\n", formatExpires(inst.ExpiresAt()))
				return nil
			})
		},
	}
	f := cmd.Flags()
	idArg(cmd, &id, idSpec{noun: "env", complete: d.completeDocs(registry.Envs)})
	f.IntVar(&version, "version", 0, "env version (default: latest)")
	sandbox = addSandboxFlags(cmd, "the env")
	f.IntVar(&ttl, "ttl-seconds", 10800, "time to live, 60..1209600 seconds")
	f.StringVar(&mode, "gateway-mode", "performance", "performance or consistent")
	f.StringVar(&gateway, "gateway", envdeploy.DefaultGatewayID, "gateway env id")
	f.StringVar(&stateType, "env-state-type", "", "service_db only: postgres (the default)")
	f.StringVar(&stateID, "env-state-instance-id", "", "service_db only: start with a copy of this running state instance's data")
	out = addOutputFlag(cmd, formatTable)
	return cmd
}
