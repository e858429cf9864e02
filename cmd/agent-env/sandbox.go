package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/local"
)

func newSandboxCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox", Short: "Manage sandbox resources"}
	var allStores bool
	var providers []string
	prune := &cobra.Command{
		Use:   "prune",
		Short: "Remove the containers, networks, process groups and work folders this store's dead runs left behind",
		Long: "Remove what a killed or finished process of this store left behind: resources labelled\n" +
			"agentenv.* with this store's id (agentenv.store) that are expired, or whose owner process is\n" +
			"gone and whose instance is not recorded as deployed; and the recorded sandboxes (work folders)\n" +
			"of abandoned task runs. Another store's resources are kept unless --all-stores is given.\n" +
			"Every kept sandbox is printed with why it is kept.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withEnvSession(cmd.Context(), "", func(ctx context.Context, s *envSession) error {
				rep, err := s.dep.Prune(ctx, &envdeploy.PruneOptions{AllStores: allStores, Providers: providers})
				if rep == nil {
					return err
				}
				for _, r := range rep.Removed {
					fmt.Fprintf(d.stdout, "Removed %s\n", r)
				}
				n := len(rep.Removed)
				removed, aerr := d.pruneAbandoned(ctx, s.st)
				for _, r := range removed {
					fmt.Fprintf(d.stdout, "Removed %s\n", r)
				}
				n += len(removed)
				for _, k := range rep.Kept {
					fmt.Fprintf(d.stdout, "Kept %s\n", k)
				}
				for _, sk := range rep.Skipped {
					d.logger().Info("prune skipped a sandbox backend", "reason", sk)
				}
				fmt.Fprintf(d.stdout, "Pruned %d %s; kept %d %s.\n", n, plural(n, "resource", "resources"),
					len(rep.Kept), plural(len(rep.Kept), "sandbox", "sandboxes"))
				return errors.Join(err, aerr)
			})
		},
	}
	prune.Flags().BoolVar(&allStores, "all-stores", false, "also prune the orphans of other stores (and of none) on this engine")
	prune.Flags().StringSliceVar(&providers, "provider", nil, "prune only these sandbox providers' resources (e.g. kubernetes); default all")
	cmd.AddCommand(prune)
	return cmd
}

// pruneAbandoned terminates the recorded sandboxes (deploy_sandbox work
// folders and containers) of this store's abandoned task runs that still
// exist. Env and agent groups of those runs carry owner labels, so the
// label prune already removed them.
func (d *deps) pruneAbandoned(ctx context.Context, st *storeSet) ([]string, error) {
	providers := d.sandboxProviders(local.New(d.sandboxRoot(), &local.Options{Logger: d.logger()}), st)
	svc := &runner.Services{Sandboxes: providers}
	var removed []string
	var errs []error
	for _, ds := range st.documentStores() {
		recs, err := ds.QueryRecords(ctx, registry.TaskInstances, &registry.RecordQuery{Where: map[string]any{"status": runner.StatusAbandoned}})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range recs {
			var inst runner.Instance
			if r.Decode(&inst) != nil {
				continue
			}
			rc := runner.NewRunContext(inst.Context, svc)
			for _, sbx := range rc.Sandboxes() {
				if sbx.Handle == nil {
					continue
				}
				sb, err := svc.Reconnect(ctx, *sbx.Handle)
				if errors.Is(err, sandbox.ErrNotFound) || errors.Is(err, runner.ErrUnknownProvider) {
					continue // gone already, or a provider this build lacks
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("sandbox %s of abandoned run %s: %w", sbx.SandboxID, inst.InstanceID, err))
					continue
				}
				where := ""
				if f, ok := sb.(interface{ Dir() string }); ok {
					where = ", folder " + f.Dir()
				}
				tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				err = sb.Terminate(tctx)
				cancel()
				if err != nil {
					errs = append(errs, fmt.Errorf("sandbox %s of abandoned run %s: %w", sbx.SandboxID, inst.InstanceID, err))
					continue
				}
				removed = append(removed, fmt.Sprintf("sandbox %s (%s%s) of abandoned run %s", sbx.SandboxID, sbx.SandboxType, where, inst.InstanceID))
			}
		}
	}
	for _, p := range providers {
		_ = p.Close()
	}
	return removed, errors.Join(errs...)
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339, s)
	return t
}
