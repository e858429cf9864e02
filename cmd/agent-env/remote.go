package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/eval"
	"github.com/agentenv/agentenv/runner/temporal"
)

// localOnlyProviders run workloads as processes of the submitting
// machine; a remote worker cannot honour them.
var localOnlyProviders = []string{"process"}

// refuseLocalOnly names the first step that would need a local-only
// provider on a remote worker. Steps declare the provider they use
// (runner.SandboxUser: their own field or the run's overrides); a step
// that declares none ("") uses the run's default (--sandbox, [sandbox]
// default).
func refuseLocalOnly(t *runner.Task, rc *runner.RunContext, defaultSandbox string) error {
	for i, d := range t.Steps {
		u, ok := d.Config.(runner.SandboxUser)
		if !ok {
			continue
		}
		spec, creates := u.SandboxProvider(rc)
		if !creates {
			continue
		}
		if p := namesLocalOnly(spec); p != "" {
			return fmt.Errorf("step %d (id %q, %s) uses the local-only sandbox provider %q (its sandbox_type or the run's sandbox override), which remote workers cannot run; use local, docker or kubernetes",
				i+1, d.ID, d.Type, p)
		}
		if spec == "" {
			if p := namesLocalOnly(defaultSandbox); p != "" {
				return fmt.Errorf("step %d (id %q, %s) would deploy on the local-only sandbox provider %q (the run's default), which remote workers cannot run; pass --sandbox local, docker or kubernetes",
					i+1, d.ID, d.Type, p)
			}
		}
	}
	return nil
}

func namesLocalOnly(spec string) string {
	for _, p := range strings.Split(spec, ",") {
		p = strings.TrimSpace(p)
		for _, l := range localOnlyProviders {
			if p == l {
				return p
			}
		}
	}
	return ""
}

// remoteRun is one run to submit.
type remoteRun struct {
	rc     *runner.RunContext
	prefix string
	stem   string
}

// runRemote submits runs to Temporal and, unless detach, follows them.
func runRemote(ctx context.Context, d *deps, tc config.RunnerTemporal, t *runner.Task, runs []remoteRun,
	start int, dir string, detach bool, defaultSandbox string) error {
	for _, rn := range runs {
		if err := refuseLocalOnly(t, rn.rc, defaultSandbox); err != nil {
			return err
		}
	}
	steps, err := t.StepsJSON()
	if err != nil {
		return err
	}
	c, err := dialTemporal(ctx, d, tc)
	if err != nil {
		return err
	}
	defer c.Close()
	ids := make([]string, len(runs))
	for i, rn := range runs {
		id := registry.NewInstanceID(t.ID)
		rn.rc.SetMetadata("task_id", t.ID)
		rn.rc.SetMetadata("instance_id", id)
		in := temporal.RunInput{TaskID: t.ID, TaskVersion: t.Version, Steps: steps, Context: rn.rc.Snapshot(),
			InstanceID: id, StartStep: start}
		if tc.HeartbeatTimeoutSeconds > 0 {
			in.HeartbeatTimeout = secondsDuration(tc.HeartbeatTimeoutSeconds)
		}
		ref, err := c.Submit(ctx, in)
		if err != nil {
			return err
		}
		ids[i] = ref.WorkflowID
		fmt.Fprintf(d.stdout, "%sSubmitted run: %s (run id %s, task queue %s)\n", rn.prefix, ref.WorkflowID, ref.RunID, c.TaskQueue())
	}
	if detach {
		return nil
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(runs))
	for i, rn := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = followRemote(ctx, c, ids[i], rn, t, dir, d.stdout, &mu)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("stopped following (the runs go on; agent-env task status ID, agent-env task cancel ID): %w", context.Cause(ctx))
	}
	return errors.Join(errs...)
}

// evalOnTemporal makes an eval's runs Temporal workflows: it refuses the
// tasks that need a local-only provider, dials the server (an unreachable
// one fails here, before any run) and sets opts.Remote. The caller closes
// the client once the eval ends.
func evalOnTemporal(ctx context.Context, d *deps, tc config.RunnerTemporal, jobs []eval.Job, initial map[string]any,
	defaultSandbox string, opts *eval.RunOptions) (*temporal.Client, error) {
	steps := make(map[string]json.RawMessage, len(jobs))
	for _, j := range jobs {
		if err := refuseLocalOnly(j.Task, runner.NewRunContext(initial, nil), defaultSandbox); err != nil {
			return nil, fmt.Errorf("task %s: %w", j.Task.ID, err)
		}
		b, err := j.Task.StepsJSON()
		if err != nil {
			return nil, err
		}
		steps[j.Task.ID] = b
	}
	c, err := dialTemporal(ctx, d, tc)
	if err != nil {
		return nil, err
	}
	opts.Remote = func(ctx context.Context, j eval.Job, rc *runner.RunContext, id string) (*eval.RemoteRun, error) {
		in := temporal.RunInput{TaskID: j.Task.ID, TaskVersion: j.Task.Version, Steps: steps[j.Task.ID],
			Context: rc.Snapshot(), InstanceID: id, HeartbeatTimeout: secondsDuration(tc.HeartbeatTimeoutSeconds)}
		if _, err := c.Submit(ctx, in); err != nil {
			return nil, err
		}
		out, err := c.Wait(ctx, id, nil)
		if err != nil {
			if ctx.Err() != nil {
				// Interrupted: the run is ours, so it stops too.
				_ = c.Cancel(context.WithoutCancel(ctx), id)
			}
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
		res, runErr := out.Result()
		return &eval.RemoteRun{Result: res, Err: runErr, Context: out.Context, TornDown: out.TornDown}, nil
	}
	return c, nil
}

func followRemote(ctx context.Context, c *temporal.Client, id string, rn remoteRun, t *runner.Task, dir string, w io.Writer, mu *sync.Mutex) error {
	print := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, rn.prefix+format, args...)
	}
	seen := 0
	show := func(p *temporal.Progress) {
		for ; seen < len(p.Ended); seen++ {
			l := p.Ended[seen]
			if l.Error != "" {
				print("Failed step: %s: %s\n", l.StepID, l.Error)
			} else {
				print("Completed step: %s\n", l.StepID)
			}
		}
	}
	out, err := c.Wait(ctx, id, show)
	if err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	show(&temporal.Progress{Ended: ledgerAsProgress(out.Ledger)})
	path := filepath.Join(dir, rn.stem+"_"+runner.RandomHex(4)+".json")
	b, _ := json.MarshalIndent(out.Context, "", "  ")
	if werr := os.WriteFile(path, append(b, '\n'), 0o644); werr != nil {
		return werr
	}
	print("Context written: %s\n", path)
	switch out.Status {
	case runner.StatusCompleted:
		print("Task completed!\n")
		return nil
	default:
		return fmt.Errorf("run %s %s: %s", id, out.Status, out.Error)
	}
}

// ledgerAsProgress lists the ledger's final outcomes in the order the
// progress query reports them, so the lines not yet printed follow.
func ledgerAsProgress(l []temporal.LedgerLine) []temporal.LedgerLine {
	out := make([]temporal.LedgerLine, 0, len(l))
	for _, e := range l {
		if e.Outcome == runner.OutcomeSkipped {
			continue
		}
		if e.Outcome != runner.OutcomeSuccess && e.Error == "" {
			e.Error = e.Outcome
		}
		out = append(out, e)
	}
	return out
}

func newTaskStatusCmd(d *deps) *cobra.Command {
	return &cobra.Command{
		Use:   "status ID",
		Short: "Show a run submitted to Temporal ([runner] impl = \"temporal\"): running steps, or its result",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withTemporal(cmd.Context(), func(ctx context.Context, c *temporal.Client) error {
				st, err := c.Status(ctx, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(d.stdout, "Run: %s\nStatus: %s\n", st.ID, st.Status)
				if p := st.Progress; p != nil {
					running := append([]string(nil), p.Running...)
					sort.Strings(running)
					fmt.Fprintf(d.stdout, "Steps ended: %d/%d\nRunning: %s\n", len(p.Ended), p.Total, strings.Join(running, ", "))
				}
				if o := st.Output; o != nil {
					if o.Error != "" {
						fmt.Fprintf(d.stdout, "Error: %s\n", o.Error)
					}
					for _, l := range o.Ledger {
						fmt.Fprintf(d.stdout, "  %s: %s\n", l.StepID, l.Outcome)
					}
					fmt.Fprintf(d.stdout, "Sandboxes torn down: %d\n", o.TornDown)
				}
				return nil
			})
		},
	}
}

func newTaskCancelCmd(d *deps) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a run submitted to Temporal: its steps stop and its sandboxes are torn down",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withTemporal(cmd.Context(), func(ctx context.Context, c *temporal.Client) error {
				if err := c.Cancel(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(d.stdout, "Cancel requested: %s\n", args[0])
				return nil
			})
		},
	}
}

// withTemporal loads the config, dials [runner.temporal] and runs fn with
// the client, closing it after: the commands that act on one remote run.
func (d *deps) withTemporal(ctx context.Context, fn func(context.Context, *temporal.Client) error) error {
	cfg, err := d.loadConfig()
	if err != nil {
		return err
	}
	c, err := dialTemporal(ctx, d, cfg.Runner.Temporal)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(ctx, c)
}
