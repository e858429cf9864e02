package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/internal/steplines"
)

// Outcomes of one run.
const (
	Passed    = "passed"     // completed, every verification scored 1
	NotPassed = "not passed" // completed, some verification below 1, or none
	Failed    = "failed"     // a step failed
	Cancelled = "cancelled"  // interrupted
)

// Job is one task of an eval run, with the services and the document
// store its runs use (a task's store follows its id).
type Job struct {
	// Name is the task's name in lines and tables ("tasks/hello.json");
	// "" = its id.
	Name      string
	Task      *runner.Task
	Services  *runner.Services
	Documents registry.DocumentStore // task instances; nil = none
}

// RunOptions tunes Run; nil means one run per task, four at once.
type RunOptions struct {
	// K is the number of runs of every task; 0 = 1.
	K int
	// MaxConcurrency bounds the runs at once across all tasks; 0 = 4.
	MaxConcurrency int
	// Initial is the context every run starts from (deep-copied per run);
	// metadata.run_group_id is set to one id for the whole eval.
	Initial map[string]any
	// Runner names the metadata.runner of the runs; "" = "eval".
	Runner string
	// OutputDir, when set, receives each run's context JSON
	// (<task>_run<i>_<8 hex>.json, secrets stripped).
	OutputDir string
	// Out receives one line per step and per finished run; nil discards.
	Out io.Writer
	// OnStepStart and OnStepComplete, when set, are called around every
	// step of every run (e.g. for a terminal progress display).
	OnStepStart    func(label string, i, n int, d *runner.StepDef)
	OnStepComplete func(label string, i, n int, d *runner.StepDef, secs float64, err error)
	// Remote, when set, runs each run elsewhere (a Temporal worker)
	// instead of in this process: the step hooks are not called, and the
	// remote side tears the run's sandboxes down.
	Remote Remote
}

// Remote runs one run of job's task from the context rc under
// instanceID, and returns how it ended.
type Remote func(ctx context.Context, job Job, rc *runner.RunContext, instanceID string) (*RemoteRun, error)

// RemoteRun is how a remote run ended.
type RemoteRun struct {
	Result *runner.Result
	// Err is the run's error when it did not complete.
	Err error
	// Context is the run's final context, secrets stripped.
	Context  map[string]any
	TornDown int
}

// RunResult is one run of one task.
type RunResult struct {
	Name        string  `json:"name"`
	TaskID      string  `json:"task_id"`
	TaskVersion int     `json:"task_version"`
	Run         int     `json:"run"` // 1-based
	InstanceID  string  `json:"instance_id,omitempty"`
	Outcome     string  `json:"outcome"`
	Score       float64 `json:"score"`
	Error       string  `json:"error,omitempty"`
	ContextFile string  `json:"context_file,omitempty"`
	// Failing are the verifier rows that scored below 1.
	Failing  []runner.FailingRow `json:"failing_rows,omitempty"`
	Seconds  float64             `json:"seconds"`
	TornDown int                 `json:"torn_down"`
	started  bool
}

// TaskStats are the scores of one task over its runs. PassAt1 and PassAtK
// are nil when undefined (no run finished, or fewer runs than K).
type TaskStats struct {
	Name        string   `json:"name"`
	TaskID      string   `json:"task_id"`
	TaskVersion int      `json:"task_version"`
	Runs        int      `json:"runs"`
	Passed      int      `json:"passed"`
	MeanScore   float64  `json:"mean_score"`
	K           int      `json:"k"`
	PassAt1     *float64 `json:"pass_at_1"`
	PassAtK     *float64 `json:"pass_at_k"`
}

// Report is a finished eval run.
type Report struct {
	K        int          `json:"k"`
	Stats    []TaskStats  `json:"tasks"`
	Runs     []*RunResult `json:"runs"`
	TornDown int          `json:"torn_down"`
	// TeardownErrors lists the teardowns that failed.
	TeardownErrors []string `json:"teardown_errors,omitempty"`
}

// Failed reports whether a run failed or was cancelled, or a teardown
// failed: a run that only scored below 1 is a result, not a failure.
func (rep *Report) Failed() bool {
	for _, r := range rep.Runs {
		if r.Outcome == Failed || r.Outcome == Cancelled {
			return true
		}
	}
	return len(rep.TeardownErrors) > 0
}

// Run runs every job's task K times, at most MaxConcurrency runs at once,
// and scores each task. Every run's sandboxes are torn down as soon as the
// run ends, however it ends; when ctx is cancelled (Ctrl-C) the running
// runs are cancelled, their teardowns still finish, no new run starts, and
// Run returns the report with the cause of the cancellation.
func Run(ctx context.Context, r *runner.Runner, jobs []Job, o *RunOptions) (*Report, error) {
	var opts RunOptions
	if o != nil {
		opts = *o
	}
	opts.K = max(opts.K, 1)
	if opts.MaxConcurrency <= 0 {
		opts.MaxConcurrency = 4
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Runner == "" {
		opts.Runner = "eval"
	}
	if opts.OutputDir != "" {
		if err := os.MkdirAll(opts.OutputDir, 0o755); err != nil {
			return nil, fmt.Errorf("output dir: %w", err)
		}
	}
	out := steplines.New(opts.Out)
	group := registry.RandomSuffix(32)
	rep := &Report{K: opts.K}
	sem := make(chan struct{}, opts.MaxConcurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, job := range jobs {
		for i := range opts.K {
			if job.Name == "" {
				job.Name = job.Task.ID
			}
			rr := &RunResult{Name: job.Name, TaskID: job.Task.ID, TaskVersion: job.Task.Version, Run: i + 1, Outcome: Cancelled}
			rep.Runs = append(rep.Runs, rr)
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return // never started
				}
				defer func() { <-sem }()
				if ctx.Err() != nil {
					return
				}
				rr.started = true
				err := runOnce(ctx, r, job, rr, group, opts, out)
				mu.Lock()
				defer mu.Unlock()
				rep.TornDown += rr.TornDown
				if err != nil {
					rep.TeardownErrors = append(rep.TeardownErrors, err.Error())
				}
			}()
		}
	}
	wg.Wait()
	rep.Stats = stats(jobs, rep.Runs, opts.K)
	if ctx.Err() != nil {
		return rep, context.Cause(ctx)
	}
	return rep, nil
}

// runOnce runs one task once, tears its sandboxes down and writes its
// context; the error is the teardown's.
func runOnce(ctx context.Context, r *runner.Runner, job Job, rr *RunResult, group string, o RunOptions, out *steplines.Writer) error {
	label := fmt.Sprintf("%s run %d/%d", rr.Name, rr.Run, o.K)
	rc := runner.NewRunContext(initial(o, group), job.Services)
	rr.InstanceID = registry.NewInstanceID(job.Task.ID)
	started := time.Now()
	var res *runner.Result
	var err, terr error
	if o.Remote != nil {
		res, err, rc = runRemote(ctx, o.Remote, job, rc, rr)
	} else {
		res, err = r.Run(ctx, job.Task, rc, out.Wire(&runner.RunOptions{InstanceID: rr.InstanceID, Documents: job.Documents},
			steplines.Steps{Label: label, OnStart: o.OnStepStart, OnComplete: o.OnStepComplete}))
		// Tear down at once, whatever happened: a cancelled run's
		// sandboxes go too (TeardownRun ignores ctx's cancellation).
		rr.TornDown, terr = r.TeardownRun(ctx, rc, 0)
	}
	rr.Seconds = time.Since(started).Seconds()
	rr.Outcome, rr.Score, rr.Error = outcome(res, err, rc)
	rr.Failing = rc.FailingRows()
	if o.OutputDir != "" {
		path := filepath.Join(o.OutputDir, fmt.Sprintf("%s_run%d_%s.json", fileSafe(job.Task.ID), rr.Run, runner.RandomHex(4)))
		b, _ := json.MarshalIndent(rc.SafeSnapshot(), "", "  ")
		if werr := os.WriteFile(path, append(b, '\n'), 0o644); werr == nil {
			rr.ContextFile = path
		} else {
			terr = errors.Join(terr, werr)
		}
	}
	line := fmt.Sprintf("[%s] %s, score %.3g, in %.1fs, instance %s", label, rr.Outcome, rr.Score, rr.Seconds, rr.InstanceID)
	if rr.Error != "" {
		line += ": " + rr.Error
	}
	out.Printf("%s\n", line)
	if terr != nil {
		return fmt.Errorf("%s: teardown: %w", label, terr)
	}
	return nil
}

// runRemote runs one run through remote and returns its result, error and
// final context (without services: it is only graded and written).
func runRemote(ctx context.Context, remote Remote, job Job, rc *runner.RunContext, rr *RunResult) (*runner.Result, error, *runner.RunContext) {
	rc.SetMetadata("task_id", job.Task.ID)
	rc.SetMetadata("instance_id", rr.InstanceID)
	got, err := remote(ctx, job, rc, rr.InstanceID)
	if err != nil {
		if ctx.Err() != nil {
			return &runner.Result{Status: runner.StatusCancelled}, err, rc
		}
		return nil, err, rc
	}
	rr.TornDown = got.TornDown
	return got.Result, got.Err, runner.NewRunContext(got.Context, nil)
}

func initial(o RunOptions, group string) map[string]any {
	c := map[string]any{}
	for k, v := range o.Initial {
		c[k] = v
	}
	md := map[string]any{}
	if m, ok := c["metadata"].(map[string]any); ok {
		for k, v := range m {
			md[k] = v
		}
	}
	md["run_group_id"], md["runner"] = group, o.Runner
	c["metadata"] = md
	return c // NewRunContext deep-copies it
}

// outcome grades a run: passed when it completed and every verification
// scored 1. Its score is the mean of its verification scores, 0 when it
// failed, was cancelled or has none.
func outcome(res *runner.Result, err error, rc *runner.RunContext) (string, float64, string) {
	switch {
	case res != nil && res.Status == runner.StatusCancelled:
		return Cancelled, 0, ""
	case err != nil:
		return Failed, 0, err.Error()
	}
	for _, f := range res.Failed {
		if !f.Retried {
			return Failed, 0, fmt.Sprintf("step %q: %s", f.StepID, f.Error)
		}
	}
	mean, ok := rc.MeanScore()
	if !ok {
		return NotPassed, 0, "no verification"
	}
	for _, v := range rc.Verifications() {
		if v.Score < 1 {
			return NotPassed, mean, ""
		}
	}
	return Passed, mean, ""
}

// stats scores each task over its runs that started.
func stats(jobs []Job, runs []*RunResult, k int) []TaskStats {
	out := make([]TaskStats, 0, len(jobs))
	for _, j := range jobs {
		s := TaskStats{Name: j.Name, TaskID: j.Task.ID, TaskVersion: j.Task.Version, K: k}
		if s.Name == "" {
			s.Name = j.Task.ID
		}
		sum := 0.0
		for _, r := range runs {
			if r.TaskID != j.Task.ID || !r.started {
				continue
			}
			s.Runs++
			sum += r.Score
			if r.Outcome == Passed {
				s.Passed++
			}
		}
		if s.Runs > 0 {
			s.MeanScore = sum / float64(s.Runs)
		}
		if p, ok := PassAtK(s.Runs, s.Passed, 1); ok {
			s.PassAt1 = &p
		}
		if p, ok := PassAtK(s.Runs, s.Passed, k); ok {
			s.PassAtK = &p
		}
		out = append(out, s)
	}
	return out
}

// fileSafe maps an id to a file name stem.
func fileSafe(id string) string {
	return strings.NewReplacer("/", "_", "\\", "_", ":", "_").Replace(id)
}
