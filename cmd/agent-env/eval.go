package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/eval"
)

func newEvalCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "eval", Short: "Create, inspect and run evals (named, versioned lists of tasks)"}
	cmd.AddCommand(newEvalCreateCmd(d), newEvalGetCmd(d), newEvalListCmd(d), newEvalRunCmd(d))
	return cmd
}

func newEvalCreateCmd(d *deps) *cobra.Command {
	var id string
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "create FILE",
		Short: "Store an eval from a JSON list of tasks",
		Long: "Store an eval: FILE is a JSON list of {\"task_id\": ..., \"version\": ...} objects\n" +
			"(version optional: the latest at run time). Each task is listed once and must exist;\n" +
			"nothing is stored otherwise. Storing under an existing id adds a version.",
		Example: "  echo '[{\"task_id\":\"hello\"},{\"task_id\":\"q3\",\"version\":2}]' > eval.json\n" +
			"  agent-env eval create eval.json --id smoke\n" +
			"  agent-env eval run smoke --k 5",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			refs, err := eval.ParseJSON(args[0], data)
			if err != nil {
				return err
			}
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				e, err := eval.Create(ctx, st.docsFor(id), st.docsFor, id, args[0], refs)
				if err != nil {
					return err
				}
				if out.structured() {
					return printJSON(d, e)
				}
				fmt.Fprintf(d.stdout, "Created eval: id=%s version=%d tasks=%d\n", e.ID, e.Version, len(e.Tasks))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "eval id (required)")
	out = addOutputFlag(cmd, formatTable)
	_ = cmd.MarkFlagRequired("id")
	return cmd
}

func newEvalGetCmd(d *deps) *cobra.Command { return newDocGetCmd(d, registry.Evals, "eval") }

func newEvalListCmd(d *deps) *cobra.Command {
	return newDocListCmd(d, registry.Evals, "eval", "tasks", "TASKS")
}

type evalRunRequest struct {
	id, outputDir, agentModel string
	version, k, concurrency   int
	failUnder                 *failUnder
	sandbox                   *sandboxFlags
	out                       *outputFlag
}

func newEvalRunCmd(d *deps) *cobra.Command {
	var req evalRunRequest
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run every task of an eval k times and score each with pass@k",
		Long: "Run every task of a stored eval k times, at most --max-concurrency runs at once.\n" +
			"Each run's sandboxes are torn down as soon as it ends, however it ends; Ctrl-C cancels\n" +
			"the running runs and waits for their teardowns (a second Ctrl-C stops waiting). Each\n" +
			"run's context is written to --output-dir. The table gives, per task, the runs, how many\n" +
			"passed (every verification scored 1), the mean score, pass@1 and pass@k.",
		Example: "  agent-env eval run smoke --k 5 --max-concurrency 4\n" +
			"  agent-env eval run smoke --json > results.json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.k < 1 {
				return fmt.Errorf("--k must be at least 1, got %d", req.k)
			}
			if req.concurrency < 1 {
				return fmt.Errorf("--max-concurrency must be at least 1, got %d", req.concurrency)
			}
			return runEval(cmd.Context(), d, req)
		},
	}
	f := cmd.Flags()
	idArg(cmd, &req.id, idSpec{noun: "eval", complete: d.completeDocs(registry.Evals)})
	f.IntVar(&req.version, "version", 0, "eval version (default latest)")
	f.IntVar(&req.k, "k", 1, "runs of every task")
	f.IntVar(&req.concurrency, "max-concurrency", 4, "runs at once, across all tasks")
	f.StringVar(&req.agentModel, "agent-model", "", "agent model override")
	f.StringVar(&req.agentModel, "model", "", "alias of --agent-model")
	req.failUnder = addFailUnder(cmd)
	req.sandbox = addSandboxFlags(cmd, "envs, agents and sandboxes")
	f.StringVar(&req.outputDir, "output-dir", "", "where run contexts are written (default /tmp/evalid=<id>-run<6hex>)")
	req.out = addOutputFlag(cmd, formatTable)
	return cmd
}

func runEval(ctx context.Context, d *deps, req evalRunRequest) error {
	st, err := d.openStores(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	lines := d.stdout
	if req.out.structured() {
		lines = d.stderr
	}
	e, err := eval.Load(ctx, st.docsFor(req.id), registry.Ref{ID: req.id, Version: req.version})
	if err != nil {
		return err
	}
	fmt.Fprintf(lines, "Found eval: id=%s version=%d tasks=%d\n", e.ID, e.Version, len(e.Tasks))
	r := runner.New(&runner.Options{Steps: d.steps(), Logger: d.logger()})
	jobs := make([]eval.Job, 0, len(e.Tasks))
	for i, tr := range e.Tasks {
		docs := st.docsFor(tr.TaskID)
		t, err := r.LoadTask(ctx, docs, tr.Ref())
		if err != nil {
			return fmt.Errorf("eval %s version %d: tasks[%d]: %w", e.ID, e.Version, i, err)
		}
		jobs = append(jobs, eval.Job{Task: t, Services: d.services(ctx, st, t.ID), Documents: docs})
	}
	dir := req.outputDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "evalid="+fileSafe(e.ID)+"-run"+runner.RandomHex(3))
	}
	md := map[string]any{"eval_id": e.ID, "eval_version": e.Version}
	if uo := sandboxOverrides(req.sandbox); len(uo) > 0 {
		md["user_overrides"] = uo
	}
	initial := map[string]any{"metadata": md}
	if req.agentModel != "" {
		initial["agent_model"] = req.agentModel
	}
	prog := d.newProgress() // a spinner for long steps, on a terminal only (progress.go)
	defer prog.Close()
	opts := &eval.RunOptions{
		K: req.k, MaxConcurrency: req.concurrency, Initial: initial, OutputDir: dir, Out: prog.Writer(lines),
		OnStepStart: func(label string, i, n int, sd *runner.StepDef) {
			prog.Start(label+"|"+sd.ID, fmt.Sprintf("[%s] step %d/%d %s (%s)", label, i+1, n, sd.ID, sd.Type))
		},
		OnStepComplete: func(label string, _, _ int, sd *runner.StepDef, _ float64, _ error) { prog.Done(label + "|" + sd.ID) },
	}
	cfg, err := d.loadConfig()
	if err != nil {
		return err
	}
	if cfg.Runner.Impl == config.TemporalRunnerImpl {
		c, err := evalOnTemporal(ctx, d, cfg.Runner.Temporal, jobs, initial, st.defaultSandbox, opts)
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Fprintf(lines, "Submitting runs to Temporal (task queue %s)\n", c.TaskQueue())
	}
	rep, err := eval.Run(ctx, r, jobs, opts)
	prog.Close()
	if rep == nil {
		return err
	}
	fmt.Fprintf(lines, "Run contexts written to: %s\n", dir)
	if req.out.structured() {
		if jerr := printJSON(d, evalReportJSON{ID: e.ID, Version: e.Version, OutputDir: dir, Report: rep}); jerr != nil {
			return jerr
		}
	} else {
		for _, rr := range rep.Runs {
			printFailing(d.stdout, fmt.Sprintf("%s run %d", rr.Name, rr.Run), rr.Failing)
		}
		printEvalTable(d.stdout, rep)
	}
	if err != nil {
		return err // interrupted: the cause carries the exit code
	}
	if rep.Failed() {
		return errSilent
	}
	scores := make([]float64, len(rep.Runs))
	for i, rr := range rep.Runs {
		scores[i] = rr.Score
	}
	return req.failUnder.check(mean(scores))
}

// evalReportJSON is what eval run --json prints.
type evalReportJSON struct {
	ID        string `json:"eval_id"`
	Version   int    `json:"eval_version"`
	OutputDir string `json:"output_dir"`
	*eval.Report
}

// printEvalTable prints the per-task results of an eval run; pass@k has
// its column when k > 1.
func printEvalTable(w io.Writer, rep *eval.Report) {
	fmt.Fprintln(w, "Results:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "  TASK\tVERSION\tRUNS\tPASSED\tMEAN SCORE\tPASS@1")
	if rep.K > 1 {
		fmt.Fprintf(tw, "\tPASS@%d", rep.K)
	}
	fmt.Fprintln(tw)
	for _, s := range rep.Stats {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%.3f\t%s", s.Name, s.TaskVersion, s.Runs, s.Passed, s.MeanScore, fmtRate(s.PassAt1))
		if rep.K > 1 {
			fmt.Fprintf(tw, "\t%s", fmtRate(s.PassAtK))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "Tore down %d %s.\n", rep.TornDown, plural(rep.TornDown, "sandbox", "sandboxes"))
}

// fmtRate prints a pass rate, or "-" when undefined (fewer runs than k).
func fmtRate(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *p)
}
