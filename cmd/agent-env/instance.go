package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/redact"
	"github.com/agentenv/agentenv/runner/envdeploy"
)

// instanceKind is what `env` and `a2a-agent` get-instance and teardown act
// on: both open the same session and take the same flags, and differ only
// in the deployer call (method expressions, so the receiver comes first).
type instanceKind struct {
	noun     string // "env" or "agent", for help text
	records  registry.Collection
	get      func(dep *envdeploy.Deployer, ctx context.Context, id string) (any, error)
	teardown func(dep *envdeploy.Deployer, ctx context.Context, id string) error
}

var envInstances = instanceKind{
	noun:    "env",
	records: registry.EnvInstances,
	get: func(dep *envdeploy.Deployer, ctx context.Context, id string) (any, error) {
		return dep.GetInstance(ctx, id)
	},
	teardown: (*envdeploy.Deployer).Teardown,
}

var agentInstances = instanceKind{
	noun:    "agent",
	records: registry.A2AAgentInstances,
	get: func(dep *envdeploy.Deployer, ctx context.Context, id string) (any, error) {
		return dep.GetAgentInstance(ctx, id)
	},
	teardown: (*envdeploy.Deployer).TeardownAgent,
}

func newGetInstanceCmd(d *deps, k instanceKind) *cobra.Command {
	var id string
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "get-instance",
		Short: "Print an " + k.noun + " instance record as JSON",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withEnvSession(cmd.Context(), id, func(ctx context.Context, s *envSession) error {
				inst, err := k.get(s.dep, ctx, id)
				if err != nil {
					return err
				}
				return out.print(d.stdout, masked(inst), nil)
			})
		},
	}
	idArg(cmd, &id, idSpec{noun: k.noun + " instance", flags: []string{"id", "instance-id"}, complete: d.completeRecords(k.records)})
	out = addOutputFlag(cmd, formatJSON)
	return cmd
}

// masked is an instance record with its secrets (the gateway's control
// token) masked, for printing.
func masked(inst any) any {
	var doc any
	raw, _ := json.Marshal(inst)
	_ = json.Unmarshal(raw, &doc)
	return redact.Mask(doc)
}

func newTeardownCmd(d *deps, k instanceKind) *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "teardown",
		Short: "Remove an " + k.noun + " instance (idempotent)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withEnvSession(cmd.Context(), id, func(ctx context.Context, s *envSession) error {
				if err := k.teardown(s.dep, ctx, id); err != nil {
					return err
				}
				fmt.Fprintf(d.stdout, "Tore down %s.\n", id)
				return nil
			})
		},
	}
	idArg(cmd, &id, idSpec{noun: k.noun + " instance", flags: []string{"instance-id", "id"}, complete: d.completeRecords(k.records)})
	return cmd
}

// newEnvRoleTokenCmd prints a role credential for a deployed env, for an
// agent registered by hand (mcp-config headers {"Authorization": "Bearer
// <credential>"}). It prints a secret on purpose: only on request, never
// as part of other output.
func newEnvRoleTokenCmd(d *deps) *cobra.Command {
	var id, role string
	cmd := &cobra.Command{
		Use:   "role-token",
		Short: "Print the role credential an agent sends to a deployed env's gateway (a secret)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withEnvSession(cmd.Context(), id, func(ctx context.Context, s *envSession) error {
				inst, err := s.dep.GetInstance(ctx, id)
				if err != nil {
					return err
				}
				if inst.ControlToken == "" {
					return fmt.Errorf("env instance %s was deployed without a control token: its gateway takes no role credentials", id)
				}
				fmt.Fprintln(d.stdout, protocol.RoleToken(inst.ControlToken, protocol.GatewayRole(role)))
				return nil
			})
		},
	}
	idArg(cmd, &id, idSpec{noun: "env instance", flags: []string{"instance-id", "id"}, complete: d.completeRecords(registry.EnvInstances)})
	cmd.Flags().StringVar(&role, "role", protocol.DefaultRole, "the agent's role")
	return cmd
}
