package bundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/internal/steplines"
)

// Outcomes of a task run.
const (
	Passed      = "passed"
	ScoredBelow = "scored below 1"
	Unscored    = "unscored"
	Failed      = "failed"
	Cancelled   = "cancelled"
)

// RunOptions selects and tunes a bundle run; nil means every task.
type RunOptions struct {
	Tasks   []string // task names (--task); empty = every task
	Model   string   // agent model override (--model)
	Sandbox string   // sets env_sandbox, agent_sandbox and sandbox (--sandbox)
	// EnvSandbox and AgentSandbox set env_sandbox and agent_sandbox alone,
	// over Sandbox (--env-sandbox, --agent-sandbox).
	EnvSandbox, AgentSandbox string
	// Concurrency bounds parallel task runs; 0 = 4.
	Concurrency int
	// Keep skips teardown; the caller tears down with Report.Teardown.
	Keep bool
	// Documents receives task instances; nil = none.
	Documents registry.DocumentStore
	// Out receives the progress and summary lines; nil discards.
	Out io.Writer
	// Now is the clock; nil = time.Now.
	Now func() time.Time
	// OnStepStart and OnStepComplete, when set, are called around every
	// step of every task (after the step's line is printed), e.g. for a
	// terminal progress display. file is the task file ("tasks/hello.json").
	OnStepStart    func(file string, i, n int, d *runner.StepDef)
	OnStepComplete func(file string, i, n int, d *runner.StepDef, secs float64, err error)
}

// TaskRun is the outcome of one task.
type TaskRun struct {
	Task    Task
	Outcome string
	Scores  []Score
	Seconds float64
	Result  *runner.Result
	Err     error
}

// Score is one verification of a run, named by the step that wrote it.
type Score struct {
	StepID     string
	VerifierID string
	Score      float64
}

// Report is a finished bundle run.
type Report struct {
	Runs     []*TaskRun
	Skipped  []string
	TornDown int

	r        *runner.Runner
	contexts []*runner.RunContext
}

// Failed reports whether any run failed or was cancelled.
func (rep *Report) Failed() bool {
	for _, r := range rep.Runs {
		if r.Outcome == Failed || r.Outcome == Cancelled {
			return true
		}
	}
	return false
}

// Contexts are the run contexts (for --keep endpoint listings).
func (rep *Report) Contexts() []*runner.RunContext { return rep.contexts }

// Teardown terminates every sandbox of every run and returns how many.
func (rep *Report) Teardown(ctx context.Context) (int, error) {
	var errs []error
	n := 0
	for _, rc := range rep.contexts {
		k, err := rep.r.TeardownRun(ctx, rc, 120*time.Second)
		n += k
		if err != nil {
			errs = append(errs, err)
		}
	}
	rep.TornDown += n
	return n, errors.Join(errs...)
}

// Run executes the selected tasks of a materialised bundle (at most
// Concurrency at once, sharing one run_group_id), prints progress, the
// summary and the teardown line, and tears every sandbox down unless Keep.
// ctx cancellation (Ctrl-C) cancels the runs; teardown still happens.
func Run(ctx context.Context, r *runner.Runner, svc *runner.Services, m *Materialised, o *RunOptions) (*Report, error) {
	var opts RunOptions
	if o != nil {
		opts = *o
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	out := steplines.New(opts.Out)
	selected, skipped, err := selectTasks(m, opts.Tasks)
	if err != nil {
		return nil, err
	}
	rep := &Report{r: r, Skipped: skipped}
	group := registry.RandomSuffix(32)
	runs := make([]*TaskRun, len(selected))
	sem := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	for i, t := range selected {
		rc := runner.NewRunContext(initialContext(group, opts), svc)
		rep.contexts = append(rep.contexts, rc)
		runs[i] = &TaskRun{Task: t}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			runOne(ctx, r, rc, runs[i], out, opts)
		}()
	}
	wg.Wait()
	rep.Runs = runs

	out.Printf("\nTasks:\n")
	for i, tr := range runs {
		out.Printf("  %s\n", tr.SummaryLine())
		if tr.Outcome == ScoredBelow {
			for _, fr := range rep.contexts[i].FailingRows() {
				out.Printf("%s", fr.Text("    "))
			}
		}
	}
	for _, s := range skipped {
		out.Printf("  %s: skipped\n", s)
	}
	if !opts.Keep {
		n, err := rep.Teardown(ctx)
		noun := "sandboxes"
		if n == 1 {
			noun = "sandbox"
		}
		out.Printf("Tore down %d %s.\n", n, noun)
		if err != nil {
			return rep, fmt.Errorf("teardown: %w", err)
		}
	}
	return rep, nil
}

func initialContext(group string, o RunOptions) map[string]any {
	md := map[string]any{"run_group_id": group, "runner": "bundle"}
	uo := map[string]any{}
	if o.Sandbox != "" {
		uo["env_sandbox"], uo["agent_sandbox"], uo["sandbox"] = o.Sandbox, o.Sandbox, o.Sandbox
	}
	if o.EnvSandbox != "" {
		uo["env_sandbox"] = o.EnvSandbox
	}
	if o.AgentSandbox != "" {
		uo["agent_sandbox"] = o.AgentSandbox
	}
	if len(uo) > 0 {
		md["user_overrides"] = uo
	}
	c := map[string]any{"metadata": md}
	if o.Model != "" {
		c["agent_model"] = o.Model
	}
	return c
}

func selectTasks(m *Materialised, names []string) ([]Task, []string, error) {
	if len(names) == 0 {
		return m.Tasks, nil, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[strings.TrimSuffix(strings.TrimPrefix(n, "tasks/"), ".json")] = true
	}
	var sel []Task
	var skipped []string
	for _, t := range m.Tasks {
		if want[t.Name] {
			sel = append(sel, t)
			delete(want, t.Name)
		} else {
			skipped = append(skipped, t.File)
		}
	}
	if len(want) > 0 {
		var missing, have []string
		for n := range want {
			missing = append(missing, n)
		}
		for _, t := range m.Tasks {
			have = append(have, t.Name)
		}
		sort.Strings(missing)
		return nil, nil, fmt.Errorf("--task %s: no such task in the bundle (have: %s)", strings.Join(missing, ", "), strings.Join(have, ", "))
	}
	return sel, skipped, nil
}

func runOne(ctx context.Context, r *runner.Runner, rc *runner.RunContext, tr *TaskRun, out *steplines.Writer, o RunOptions) {
	file := tr.Task.File
	started := o.Now()
	res, err := r.Run(ctx, tr.Task.Task, rc, out.Wire(&runner.RunOptions{Documents: o.Documents},
		steplines.Steps{Label: file, Done: true, OnStart: o.OnStepStart, OnComplete: o.OnStepComplete}))
	tr.Result, tr.Err = res, err
	tr.Seconds = o.Now().Sub(started).Seconds()
	tr.Scores = scores(tr.Task.Task, rc)
	tr.Outcome = outcome(res, err, tr.Scores)
	switch tr.Outcome {
	case Failed:
		out.Printf("[%s] failed in %.1fs: %v\n", file, tr.Seconds, failure(res, err))
	default:
		out.Printf("[%s] %s in %.1fs\n", file, tr.Outcome, tr.Seconds)
	}
}

func failure(res *runner.Result, err error) error {
	if err != nil {
		return err
	}
	for _, f := range res.Failed {
		if !f.Retried {
			return fmt.Errorf("step %q: %s", f.StepID, f.Error)
		}
	}
	return errors.New("failed")
}

func outcome(res *runner.Result, err error, sc []Score) string {
	if res.Status == runner.StatusCancelled {
		return Cancelled
	}
	if err != nil {
		return Failed
	}
	for _, f := range res.Failed {
		if !f.Retried {
			return Failed
		}
	}
	if len(sc) == 0 {
		return Unscored
	}
	for _, s := range sc {
		if s.Score < 1 {
			return ScoredBelow
		}
	}
	return Passed
}

// scores lists the run's verifications in step order.
func scores(t *runner.Task, rc *runner.RunContext) []Score {
	vs := rc.Verifications()
	order := map[string]int{}
	for i, d := range t.Steps {
		order[d.ID] = i
	}
	var out []Score
	for id, v := range vs {
		out = append(out, Score{StepID: rc.VerifierOwner(id), VerifierID: id, Score: v.Score})
	}
	sort.Slice(out, func(i, j int) bool {
		oi, oj := order[out[i].StepID], order[out[j].StepID]
		if oi != oj {
			return oi < oj
		}
		return out[i].VerifierID < out[j].VerifierID
	})
	return out
}

// SummaryLine is "<file> v<version>: <outcome> (<step>: <score>[, …]), <secs>s, instance <id>".
func (tr *TaskRun) SummaryLine() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s v%d: %s", tr.Task.File, tr.Task.Entity.Version, tr.Outcome)
	if len(tr.Scores) > 0 {
		parts := make([]string, len(tr.Scores))
		for i, s := range tr.Scores {
			name := s.StepID
			if name == "" {
				name = s.VerifierID
			}
			parts[i] = fmt.Sprintf("%s: %g", name, s.Score)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	id := ""
	if tr.Result != nil {
		id = tr.Result.InstanceID
	}
	fmt.Fprintf(&b, ", %.1fs, instance %s", tr.Seconds, id)
	return b.String()
}
