package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/temporal"
)

// newWorkerCmd is `agent-env worker`: a Temporal worker that runs the
// steps of submitted runs ([runner] impl = "temporal").
func newWorkerCmd(d *deps) *cobra.Command {
	var queue string
	var maxSteps int
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run task steps for [runner] impl = \"temporal\" (a Temporal worker; stops gracefully on SIGTERM)",
		Long: "Serve a Temporal task queue: every step of a submitted run is an activity that runs here, with\n" +
			"this machine's stores and sandbox providers. [runner.temporal] sets the address, namespace, queue,\n" +
			"steps at once (max_concurrent_steps) and per-provider limits (provider_limits). On SIGTERM the\n" +
			"worker stops taking steps, lets running ones finish for 30 s, then hands the rest back: they are\n" +
			"retried on another worker, which first tears down what the lost attempt created.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := d.loadConfig()
			if err != nil {
				return err
			}
			tc := cfg.Runner.Temporal
			if queue != "" {
				tc.TaskQueue = queue
			}
			if maxSteps > 0 {
				tc.MaxConcurrentSteps = maxSteps
			}
			c, err := dialTemporal(ctx, d, tc)
			if err != nil {
				return err
			}
			defer c.Close()
			st, err := d.openStores(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			svc := d.services(ctx, st, "")
			r := runner.New(&runner.Options{Steps: d.steps(), Logger: d.logger()})
			wf := temporal.NewWorkflows(r, svc, &temporal.WorkflowsOptions{ProviderLimits: tc.ProviderLimits})
			w := temporal.NewWorker(c, wf, &temporal.WorkerOptions{MaxConcurrentSteps: tc.MaxConcurrentSteps})
			fmt.Fprintf(d.stdout, "Worker serving task queue %q at %s (providers: %s)\n", c.TaskQueue(), tcAddress(tc), providerList(svc))
			err = w.Run(ctx)
			fmt.Fprintln(d.stdout, "Worker stopped.")
			return err
		},
	}
	cmd.Flags().StringVar(&queue, "task-queue", "", "task queue to serve (default [runner.temporal] task_queue, or agentenv)")
	cmd.Flags().IntVar(&maxSteps, "max-concurrent-steps", 0, "steps run at once (default [runner.temporal] max_concurrent_steps, or 16)")
	return cmd
}

func tcAddress(tc config.RunnerTemporal) string {
	if tc.Address == "" {
		return "127.0.0.1:7233"
	}
	return tc.Address
}

func providerList(svc *runner.Services) string {
	names := make([]string, 0, len(svc.Sandboxes))
	for name := range svc.Sandboxes {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func secondsDuration(n int) time.Duration { return time.Duration(n) * time.Second }

// dialTemporal connects to [runner.temporal]; an unreachable server fails
// here with the address named.
func dialTemporal(ctx context.Context, d *deps, tc config.RunnerTemporal) (*temporal.Client, error) {
	return temporal.Dial(ctx, &temporal.ClientOptions{Address: tc.Address, Namespace: tc.Namespace,
		TaskQueue: tc.TaskQueue, DialTimeout: 10 * time.Second, Logger: d.logger()})
}
