package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/steps/putgate"
)

func newA2AAgentCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "a2a-agent", Short: "Register and deploy A2A agents"}
	cmd.AddCommand(newAgentPutCmd(d), newAgentGetCmd(d), newAgentDeployCmd(d), newGetInstanceCmd(d, agentInstances), newTeardownCmd(d, agentInstances))
	return cmd
}

func newAgentPutCmd(d *deps) *cobra.Command {
	var img imageFlags
	var in envdeploy.AgentInput
	var envVars, meta []string
	var validate bool
	cmd := &cobra.Command{
		Use:   "put",
		Short: "Build and register an A2A agent (--go-package P | --dockerfile F [--context D] | --image-ref R)",
		Long: "Build and register an A2A agent.\n\n" +
			"--validate first deploys the agent on throwaway stores as a local process, runs the agent release\n" +
			"gates (the verify_a2a_* steps, and an install_agent into a sandbox checked by verify_a2a_install)\n" +
			"and tears it down; a failed gate refuses the put, naming each failed gate, and nothing is stored.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if in.EnvVars, err = parseKV("env-var", envVars); err != nil {
				return err
			}
			if in.Metadata, err = parseKV("metadata", meta); err != nil {
				return err
			}
			in.Image = img.in
			if validate {
				rep, err := putgate.ValidateA2AAgent(cmd.Context(), in, nil)
				if err != nil {
					return err
				}
				if !rep.Passed {
					return rep
				}
				fmt.Fprintln(d.stdout, rep.String())
			}
			return d.withEnvSession(cmd.Context(), in.ID, func(ctx context.Context, s *envSession) error {
				_, err := s.put.PutAgent(ctx, in)
				return err
			})
		},
	}
	img.add(cmd)
	f := cmd.Flags()
	idArg(cmd, &in.ID, idSpec{noun: "agent", complete: d.completeDocs(registry.A2AAgents)})
	f.StringVar(&in.DefaultModel, "default-model", "", "the agent's default model")
	f.StringArrayVar(&envVars, "env-var", nil, "K=V set in the agent's environment (repeatable)")
	f.StringArrayVar(&meta, "metadata", nil, "k=v metadata (repeatable)")
	f.BoolVar(&validate, "validate", false, "run the agent release gates first (needs --go-package or --binary); a failed gate stores nothing")
	return cmd
}

func newAgentGetCmd(d *deps) *cobra.Command {
	var id string
	var version int
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Print an agent document as JSON",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := versionRef(id, version)
			if err != nil {
				return err
			}
			return d.withEnvSession(cmd.Context(), id, func(ctx context.Context, s *envSession) error {
				// The stored document whole, not what a typed read keeps.
				doc, err := s.put.Stores.GetDocument(ctx, registry.A2AAgents, ref)
				if err != nil {
					return err
				}
				return out.print(d.stdout, doc.Data, nil)
			})
		},
	}
	idArg(cmd, &id, idSpec{noun: "agent", complete: d.completeDocs(registry.A2AAgents)})
	cmd.Flags().IntVar(&version, "version", 0, "version (default: latest)")
	out = addOutputFlag(cmd, formatJSON)
	return cmd
}

func newAgentDeployCmd(d *deps) *cobra.Command {
	var out *outputFlag
	var id string
	var sandbox *sandboxFlags
	var version, ttl int
	var envs, envVars []string
	cmd := &cobra.Command{
		Use:   "deploy",
		Short: "Deploy an agent, optionally inside the networks of env instances",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := versionRef(id, version)
			if err != nil {
				return err
			}
			vars, err := parseKV("env-var", envVars)
			if err != nil {
				return err
			}
			return d.withEnvSession(cmd.Context(), id, func(ctx context.Context, s *envSession) error {
				var err error
				req := envdeploy.AgentDeployRequest{Agent: ref, EnvInstances: envs, Sandbox: sandbox.agentSpec(), TTL: ttlFlag(ttl), EnvVars: vars}
				if req.ModelBaseURL, err = s.st.Resolve(ctx, s.cfg.Model.BaseURL); err != nil {
					return err
				}
				if req.ModelAPIKey, err = s.st.Resolve(ctx, s.cfg.Model.APIKey); err != nil {
					return err
				}
				inst, err := s.dep.DeployAgent(ctx, req)
				if err != nil {
					return err
				}
				if out.structured() {
					return printJSON(d, masked(inst))
				}
				fmt.Fprintln(d.stdout, "Deployed!")
				fmt.Fprintf(d.stdout, "Instance ID: %s\n", inst.InstanceID)
				fmt.Fprintf(d.stdout, "Agent Url: %s\n", inst.APIURL)
				for env, u := range inst.EnvMCPURLs {
					fmt.Fprintf(d.stdout, "Env %s MCP Url (from the agent): %s\n", env, u)
				}
				fmt.Fprintf(d.stdout, "Expires At (UTC): %s\n", formatExpires(parseTime(inst.ExpiresAtUTC)))
				return nil
			})
		},
	}
	f := cmd.Flags()
	idArg(cmd, &id, idSpec{noun: "agent", complete: d.completeDocs(registry.A2AAgents)})
	f.IntVar(&version, "version", 0, "version (default: latest)")
	f.StringArrayVar(&envs, "env-instance", nil, "env instance the agent uses (repeatable); it joins its network")
	f.StringArrayVar(&envVars, "env-var", nil, "K=V (repeatable)")
	f.IntVar(&ttl, "ttl-seconds", 7200, "time to live, 60..1209600 seconds")
	sandbox = addSandboxFlags(cmd, "the agent (default: the envs' sandbox or [sandbox] agent_default)")
	out = addOutputFlag(cmd, formatTable)
	return cmd
}
