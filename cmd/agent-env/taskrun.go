package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
)

type taskRunRequest struct {
	id, outputDir, contextJSON           string
	version, k, startStep                int
	agentModel, agentArtifactID          string
	litellmKey, judgeKey                 string
	trajectoryFilter, noTrajectoryFilter bool
	a2aAgentID                           string
	sandbox                              *sandboxFlags
	gatewayEnvID, serviceDBEnvID         string
	envStateType, envStateInstanceID     string
	seeds                                string // run-batch: the seeds CSV
	concurrency                          int    // run-batch: runs at once
	failUnder                            *failUnder
	detach                               bool // [runner] impl = "temporal": submit and return the ids
}

func newTaskRunCmd(d *deps) *cobra.Command { return taskRunCmd(d, false) }

func newTaskRunBatchCmd(d *deps) *cobra.Command { return taskRunCmd(d, true) }

func taskRunCmd(d *deps, batch bool) *cobra.Command {
	var req taskRunRequest
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a stored task (never tears down; see agent-env run for bundles)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if batch && req.concurrency < 1 {
				return fmt.Errorf("--concurrency must be at least 1, got %d", req.concurrency)
			}
			if req.k < 1 {
				return fmt.Errorf("--k must be at least 1, got %d", req.k)
			}
			if req.trajectoryFilter && req.noTrajectoryFilter {
				return fmt.Errorf("--apply-trajectory-filter and --no-trajectory-filter exclude each other")
			}
			return runTask(cmd.Context(), d, req, cmd.Flags().Changed("apply-trajectory-filter") || cmd.Flags().Changed("no-trajectory-filter"))
		},
	}
	f := cmd.Flags()
	idArg(cmd, &req.id, idSpec{noun: "task", complete: d.completeDocs(registry.Tasks)})
	f.IntVar(&req.version, "version", 0, "task version (default latest)")
	f.StringVar(&req.outputDir, "output-dir", "", "where run contexts are written (default /tmp/taskid=<id>-run<6hex>)")
	if batch {
		cmd.Use, cmd.Short = "run-batch", "Run a stored task once per row of a seeds CSV"
		f.StringVar(&req.seeds, "seeds", "", "CSV of seeds: a header row, one run per non-empty row (required)")
		f.IntVar(&req.concurrency, "concurrency", 5, "runs at once")
		_ = cmd.MarkFlagRequired("seeds")
		req.k = 1
	} else {
		f.IntVar(&req.k, "k", 1, "run N times concurrently (one run group)")
	}
	f.StringVar(&req.agentModel, "agent-model", "", "agent model override")
	f.StringVar(&req.agentModel, "model", "", "alias of --agent-model")
	req.failUnder = addFailUnder(cmd)
	f.StringVar(&req.agentArtifactID, "agent-artifact-id", "", "agent artifact override")
	f.IntVar(&req.startStep, "start-step", 0, "resume: treat steps before N (0-based) as done")
	f.StringVar(&req.contextJSON, "context-json", "", "resume: the saved context to start from")
	f.StringVar(&req.litellmKey, "litellm-api-key", "", "model API key for this run (never stored)")
	f.StringVar(&req.judgeKey, "judge-litellm-api-key", "", "judge model API key for this run (never stored)")
	f.BoolVar(&req.trajectoryFilter, "apply-trajectory-filter", false, "filter trajectories given to judges")
	f.BoolVar(&req.noTrajectoryFilter, "no-trajectory-filter", false, "do not filter trajectories")
	f.StringVar(&req.a2aAgentID, "a2a-agent-id", "", "agent id override")
	req.sandbox = addSandboxFlags(cmd, "envs, agents and sandboxes")
	f.StringVar(&req.gatewayEnvID, "gateway-env-id", "", "gateway env override")
	f.StringVar(&req.serviceDBEnvID, "service-db-env-id", "", "service DB env override")
	f.StringVar(&req.envStateType, "env-state-type", "", "env state provider type")
	f.StringVar(&req.envStateInstanceID, "env-state-instance-id", "", "env state instance")
	f.BoolVar(&req.detach, "detach", false, "with [runner] impl = \"temporal\": print the submitted run ids and return")
	return cmd
}

func (req taskRunRequest) overrides(filterSet bool) map[string]any {
	uo := map[string]any{}
	set := func(k, v string) {
		if v != "" {
			uo[k] = v
		}
	}
	set("litellm_api_key", req.litellmKey)
	set("judge_litellm_api_key", req.judgeKey)
	set("a2a_agent_id", req.a2aAgentID)
	for k, v := range sandboxOverrides(req.sandbox) {
		uo[k] = v
	}
	set("gateway_env_id", req.gatewayEnvID)
	set("service_db_env_id", req.serviceDBEnvID)
	set("env_state_type", req.envStateType)
	set("env_state_instance_id", req.envStateInstanceID)
	if filterSet {
		uo["apply_trajectory_filter"] = req.trajectoryFilter && !req.noTrajectoryFilter
	}
	return uo
}

func runTask(ctx context.Context, d *deps, req taskRunRequest, filterSet bool) error {
	ver := "latest"
	if req.version > 0 {
		ver = fmt.Sprint(req.version)
	}
	fmt.Fprintf(d.stdout, "Fetching task: id=%s version=%s...\n", req.id, ver)
	initial := map[string]any{}
	if req.contextJSON != "" {
		b, err := os.ReadFile(req.contextJSON)
		if err != nil {
			return fmt.Errorf("--context-json: %w", err)
		}
		if err := json.Unmarshal(b, &initial); err != nil || initial == nil {
			return fmt.Errorf("--context-json %s: not a JSON object", req.contextJSON)
		}
	}
	st, err := d.openStores(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	docs := st.docsFor(req.id)
	r := runner.New(&runner.Options{Steps: d.steps(), Logger: d.logger()})
	t, err := r.LoadTask(ctx, docs, registry.Ref{ID: req.id, Version: req.version})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.stdout, "Found task: id=%s version=%d steps=%d\n", t.ID, t.Version, len(t.Steps))
	if req.startStep < 0 || req.startStep > len(t.Steps) {
		return fmt.Errorf("--start-step %d: the task has %d steps", req.startStep, len(t.Steps))
	}
	dir := req.outputDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "taskid="+fileSafe(t.ID)+"-run"+runner.RandomHex(3))
	}
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// A run that writes no context (refused by the batch's seeds, an
		// unreachable Temporal server, a detached submit) leaves no empty
		// folder behind; os.Remove leaves a folder holding a context alone.
		defer os.Remove(dir)
	}
	md, _ := initial["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	uo, _ := md["user_overrides"].(map[string]any)
	if uo == nil {
		uo = map[string]any{}
	}
	for k, v := range req.overrides(filterSet) {
		uo[k] = v
	}
	md["user_overrides"] = uo
	md["run_group_id"] = registry.RandomSuffix(32)
	md["runner"] = "cli"
	delete(md, "instance_id") // a resumed run mints a new instance id
	initial["metadata"] = md
	if req.agentModel != "" {
		initial["agent_model"] = req.agentModel
	}
	if req.agentArtifactID != "" {
		initial["agent_artifact_id"] = req.agentArtifactID
	}
	svc := d.services(ctx, st, t.ID)
	base := runner.NewRunContext(initial, svc)

	type run struct {
		rc     *runner.RunContext
		prefix string
		stem   string
	}
	var runs []run
	parallel := req.k
	if req.seeds != "" {
		f, err := os.Open(req.seeds)
		if err != nil {
			return fmt.Errorf("--seeds: %w", err)
		}
		rows, err := runner.ReadSeeds(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("--seeds %s: %w", req.seeds, err)
		}
		for i, row := range rows {
			rc := base.Copy()
			rc.SetMetadata("seed", row)
			if u := row["id"]; u != "" {
				rc.SetMetadata("universe_id", u)
			} else if u := row["name"]; u != "" {
				rc.SetMetadata("universe_id", u)
			}
			runs = append(runs, run{rc: rc, prefix: fmt.Sprintf("[seed %d] ", i+1), stem: fmt.Sprintf("%s-seed%d", fileSafe(t.ID), i+1)})
		}
		parallel = req.concurrency
	} else {
		for i := range req.k {
			r := run{rc: base, stem: fileSafe(t.ID)}
			if req.k > 1 {
				r.rc, r.prefix = base.Copy(), fmt.Sprintf("[run %d] ", i+1)
			}
			runs = append(runs, r)
		}
	}
	if req.contextJSON != "" && len(runs) > 0 {
		if err := reattachSaved(d.stdout, req, base, len(runs), runs[0].rc); err != nil {
			return err
		}
	}

	if cfg, err := d.loadConfig(); err != nil {
		return err
	} else if cfg.Runner.Impl == config.TemporalRunnerImpl {
		remote := make([]remoteRun, len(runs))
		for i, rn := range runs {
			remote[i] = remoteRun{rc: rn.rc, prefix: rn.prefix, stem: rn.stem}
		}
		return runRemote(ctx, d, cfg.Runner.Temporal, t, remote, req.startStep, dir, req.detach, st.defaultSandbox)
	} else if req.detach {
		return fmt.Errorf("--detach needs [runner] impl = \"temporal\" (runner.impl is %q)", cfg.Runner.Impl)
	}

	var mu sync.Mutex
	failed := 0
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(parallel, 1))
	prog := d.newProgress() // a spinner for long steps, on a terminal only (progress.go)
	defer prog.Close()
	for _, rn := range runs {
		w := prog.Writer(d.stdout)
		if rn.prefix != "" {
			w = prog.Writer(&prefixWriter{w: d.stdout, prefix: rn.prefix, mu: &mu})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			err := runTaskOnce(ctx, r, t, rn.rc, docs, req.startStep, dir, rn.stem, w, &mu, prog)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				if firstErr == nil {
					firstErr = err
				}
			}
		}()
	}
	wg.Wait()
	prog.Close()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if n := len(runs); n > 1 && failed > 0 {
		fmt.Fprintf(d.stdout, "%d/%d runs completed, %d/%d failed.\n", n-failed, n, failed, n)
		return errSilent
	}
	if firstErr != nil {
		return firstErr
	}
	scores := make([]float64, len(runs))
	for i, rn := range runs {
		scores[i] = runScore(rn.rc)
	}
	return req.failUnder.check(mean(scores))
}

// reattachSaved holds, in the one run resumed from a saved context, the env
// and agent instances that context lists: the interrupted first run
// deployed them and this process has no handle for them, so without this a
// teardown_sandboxes step of the resumed run would only mark them torn down
// and they would keep running.
//
// Several runs from one context (--k > 1, --seeds with several rows) are
// refused when it lists instances. Every copy would use the same instances
// concurrently; holding them in one run (say run 1) would let its teardown
// remove them while the other runs still use them, in an order nobody
// chose, and holding them in none leaks them. Refusing is the honest
// answer: resume one run, or start the group from a context without live
// instances.
func reattachSaved(w io.Writer, req taskRunRequest, base *runner.RunContext, runs int, only *runner.RunContext) error {
	if runs > 1 {
		// base itself never runs here (each run is a Copy, which holds no
		// handles), so reattaching to it only counts what the file lists,
		// by the rule ReattachInstances applies.
		if n := base.ReattachInstances(); n > 0 {
			how := fmt.Sprintf("--k %d", req.k)
			if req.seeds != "" {
				how = fmt.Sprintf("--seeds %s (%d rows)", req.seeds, runs)
			}
			return fmt.Errorf("--context-json %s lists %d deployed env/agent %s, which %s would share across %d runs and tear down under each other: resume it as one run",
				req.contextJSON, n, plural(n, "instance", "instances"), how, runs)
		}
		return nil
	}
	if n := only.ReattachInstances(); n > 0 {
		fmt.Fprintf(w, "Reattached saved instances: count=%d\n", n)
	}
	return nil
}

func runTaskOnce(ctx context.Context, r *runner.Runner, t *runner.Task, rc *runner.RunContext, docs registry.DocumentStore,
	start int, dir, stem string, w io.Writer, mu *sync.Mutex, prog *progress) error {
	print := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, format, args...)
	}
	id := registry.NewInstanceID(t.ID)
	print("Task instance: %s\n", id)
	res, err := r.Run(ctx, t, rc, &runner.RunOptions{
		InstanceID: id, Documents: docs, StartStep: start,
		OnStepStart: func(i, n int, sd *runner.StepDef) {
			print("Running step [%d/%d]: %s (id=%s)...\n", i+1, n, sd.Type, sd.ID)
			prog.Start(stem+"|"+id+"|"+sd.ID, fmt.Sprintf("step [%d/%d]: %s (id=%s)", i+1, n, sd.Type, sd.ID))
		},
		OnStepComplete: func(i, n int, sd *runner.StepDef, secs float64, serr error) {
			prog.Done(stem + "|" + id + "|" + sd.ID)
			if serr != nil {
				print("Failed step [%d/%d]: %s (id=%s) [%.1fs]: %v\n", i+1, n, sd.Type, sd.ID, secs, serr)
				return
			}
			print("Completed step [%d/%d]: %s (id=%s) [%.1fs]\n", i+1, n, sd.Type, sd.ID, secs)
			print("%s", stepBlock(rc, sd))
		},
	})
	path := filepath.Join(dir, stem+"_"+runner.RandomHex(4)+".json")
	b, _ := json.MarshalIndent(rc.SafeSnapshot(), "", "  ")
	werr := os.WriteFile(path, append(b, '\n'), 0o644)
	if err == nil && res.Status == runner.StatusCompleted {
		print("Task completed!\n")
	}
	if s, ok := rc.MeanScore(); ok && s < 1 {
		var b strings.Builder
		printFailing(&b, "", rc.FailingRows())
		print("%s", b.String())
	}
	if werr == nil {
		print("Task context written to: %s\n", path)
	}
	if err != nil {
		return err
	}
	return werr
}

// stepBlock renders what a completed step added: sandboxes and
// verifications.
func stepBlock(rc *runner.RunContext, sd *runner.StepDef) string {
	var b strings.Builder
	for _, s := range rc.Sandboxes() {
		if s.DeployStepID == sd.ID {
			fmt.Fprintf(&b, "deployed-sandbox:\n  sandbox_name: %s\n  sandbox_id: %s\n  sandbox_type: %s\n  sandbox_mode: %s\n",
				s.SandboxName, s.SandboxID, s.SandboxType, s.SandboxMode)
		}
	}
	vs := rc.Verifications()
	ids := make([]string, 0, len(vs))
	for id := range vs {
		if rc.VerifierOwner(id) == sd.ID {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		j, _ := json.MarshalIndent(vs[id], "", "  ")
		fmt.Fprintf(&b, "verification (verifier_id=%s)\n%s\nscore (verifier_id=%s): %g\n", id, j, id, vs[id].Score)
	}
	return b.String()
}

func fileSafe(id string) string {
	return strings.NewReplacer("/", "_", "\\", "_", ":", "_").Replace(id)
}

// prefixWriter prefixes every line (the [run i] lines of --k runs). The
// caller holds mu.
type prefixWriter struct {
	w      io.Writer
	prefix string
	mu     *sync.Mutex
	mid    bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if !p.mid {
			if _, err := io.WriteString(p.w, p.prefix); err != nil {
				return 0, err
			}
		}
		if _, err := io.WriteString(p.w, line); err != nil {
			return 0, err
		}
		p.mid = !strings.HasSuffix(line, "\n")
	}
	return len(b), nil
}
