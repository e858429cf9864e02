package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
)

var update = flag.Bool("update", false, "rewrite testdata goldens")

// probe coordinates the probe steps of one run.
type probe struct {
	mu        sync.Mutex
	runs      map[string]int
	started   map[string]chan struct{}
	completed map[string]chan struct{}
	done      map[string]bool
}

func newProbe() *probe {
	return &probe{runs: map[string]int{}, started: map[string]chan struct{}{},
		completed: map[string]chan struct{}{}, done: map[string]bool{}}
}

func (p *probe) startedCh(id string) chan struct{} { return p.ch(p.started, id) }

// completedCh is closed once the scheduler has recorded step id's end
// (RunOptions.OnStepComplete), not merely once its Run returned.
func (p *probe) completedCh(id string) chan struct{} { return p.ch(p.completed, id) }

func (p *probe) ch(m map[string]chan struct{}, id string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := m[id]
	if !ok {
		ch = make(chan struct{})
		m[id] = ch
	}
	return ch
}

// stepCompleted is the RunOptions.OnStepComplete of a golden run; a
// retried step completes more than once, and only the first closes.
func (p *probe) stepCompleted(_, _ int, d *runner.StepDef, _ float64, _ error) {
	ch := p.completedCh(d.ID)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// probeStep is a test step type: it can fail, write metadata, wait until
// other steps have started (which only completes if they run
// concurrently) or until the scheduler has recorded their end, require
// other steps to be done, and block until cancelled.
type probeStep struct {
	Fail        bool           `json:"fail"`
	FailTimes   int            `json:"fail_times"`
	Set         map[string]any `json:"set"`
	WaitStarted []string       `json:"wait_started"`
	// WaitCompleted orders this step's end after the scheduler has handled
	// the named steps' ends, so a golden need not race the scheduler.
	WaitCompleted []string `json:"wait_completed"`
	RequireDone   []string `json:"require_done"`
	Block         bool     `json:"block"`
	Note          string   `json:"note"`
	p             *probe
	id            string
}

func (s *probeStep) Validate() error {
	if s.Fail && s.FailTimes > 0 {
		return runner.Invalid("fail_times", "cannot be combined with fail")
	}
	return nil
}

func (s *probeStep) Run(ctx context.Context, rc *runner.RunContext) error {
	id := rc.StepID()
	p := s.p
	p.mu.Lock()
	p.runs[id]++
	n := p.runs[id]
	p.mu.Unlock()
	if n == 1 {
		close(p.startedCh(id))
	}
	defer func() {
		p.mu.Lock()
		p.done[id] = true
		p.mu.Unlock()
	}()
	for _, other := range s.WaitStarted {
		select {
		case <-p.startedCh(other):
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Second):
			return fmt.Errorf("%s never started alongside %s", other, id)
		}
	}
	for _, other := range s.WaitCompleted {
		select {
		case <-p.completedCh(other):
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Second):
			return fmt.Errorf("%s never completed while %s ran", other, id)
		}
	}
	for _, other := range s.RequireDone {
		p.mu.Lock()
		ok := p.done[other]
		p.mu.Unlock()
		if !ok {
			return fmt.Errorf("%s ran before %s was done", id, other)
		}
	}
	for k, v := range s.Set {
		rc.SetMetadata(k, v)
	}
	if s.Block {
		<-ctx.Done()
		return ctx.Err()
	}
	if s.Fail || n <= s.FailTimes {
		return fmt.Errorf("probe %s failed (run %d)", id, n)
	}
	return nil
}

func probeRegistry(p *probe) *runner.StepRegistry {
	reg := runner.NewStepRegistry()
	reg.Register(runner.StepInfo{Type: "probe", New: func() runner.Step { return &probeStep{p: p} }})
	reg.Register(runner.StepInfo{Type: "probe_cleanup", TolerateErrors: true, MustTolerate: true,
		New: func() runner.Step { return &probeStep{p: p} }})
	return reg
}

// parseTxtar reads the sections of a txtar archive.
func parseTxtar(b []byte) (comment string, files map[string]string) {
	files = map[string]string{}
	name := ""
	var cur bytes.Buffer
	flush := func() {
		if name == "" {
			comment = cur.String()
		} else {
			files[name] = cur.String()
		}
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(string(b), "\n") {
		t := strings.TrimRight(line, "\n")
		if strings.HasPrefix(t, "-- ") && strings.HasSuffix(t, " --") && len(t) > 6 {
			flush()
			name = strings.TrimSpace(t[3 : len(t)-3])
			continue
		}
		cur.WriteString(line)
	}
	flush()
	return comment, files
}

// TestDAGGoldens runs each testdata/dag/*.txtar: task.json (+ optional
// context.json and options) in, the ledger summary out.
func TestDAGGoldens(t *testing.T) { testDAGGoldens(t, runLocal) }

// goldenRun runs a parsed golden task on one runner implementation and
// returns its result, error and final context document.
type goldenRun func(t *testing.T, r *runner.Runner, p *probe, task *runner.Task, initial map[string]any,
	opts *runner.RunOptions, cancelWhenStarted string) (*runner.Result, error, map[string]any)

func runLocal(_ *testing.T, r *runner.Runner, p *probe, task *runner.Task, initial map[string]any,
	opts *runner.RunOptions, cancelWhenStarted string) (*runner.Result, error, map[string]any) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if cancelWhenStarted != "" {
		go func() { <-p.startedCh(cancelWhenStarted); cancel() }()
	}
	rc := runner.NewRunContext(initial, nil)
	res, err := r.Run(ctx, task, rc, opts)
	return res, err, rc.Snapshot()
}

func testDAGGoldens(t *testing.T, impl goldenRun) {
	files, _ := filepath.Glob("testdata/dag/*.txtar")
	if len(files) == 0 {
		t.Fatal("no goldens")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			comment, sec := parseTxtar(raw)
			got := runGolden(t, sec, impl)
			if *update {
				var out bytes.Buffer
				out.WriteString(comment)
				for _, name := range []string{"task.json", "context.json", "options"} {
					if v, ok := sec[name]; ok {
						fmt.Fprintf(&out, "-- %s --\n%s", name, v)
					}
				}
				fmt.Fprintf(&out, "-- want --\n%s", got)
				if err := os.WriteFile(f, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := sec["want"]; got != want {
				t.Errorf("summary mismatch\n--- got ---\n%s--- want ---\n%s", got, want)
			}
		})
	}
}

func runGolden(t *testing.T, sec map[string]string, impl goldenRun) string {
	p := newProbe()
	r := runner.New(&runner.Options{Steps: probeRegistry(p)})
	var out strings.Builder
	task, err := r.ParseTask("golden", 1, []byte(sec["task.json"]))
	if err != nil {
		fmt.Fprintf(&out, "parse error: %v\n", err)
		for _, s := range []error{runner.ErrInvalidTask, runner.ErrUnknownStepType, runner.ErrDuplicateStepID,
			runner.ErrForwardDependency, runner.ErrUnknownDependency, runner.ErrSelfDependency, runner.ErrInvalidRetryConfig} {
			if errors.Is(err, s) {
				fmt.Fprintf(&out, "is: %v\n", s)
			}
		}
		var se *runner.StepError
		if errors.As(err, &se) {
			fmt.Fprintf(&out, "step_id: %q field: %q\n", se.StepID, se.Field)
		}
		return out.String()
	}
	var initial map[string]any
	if c := sec["context.json"]; c != "" {
		if err := json.Unmarshal([]byte(c), &initial); err != nil {
			t.Fatal(err)
		}
	}
	opts := &runner.RunOptions{OnStepComplete: p.stepCompleted}
	cancelWhen := ""
	for _, line := range strings.Split(sec["options"], "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		v = strings.TrimSpace(v)
		switch k {
		case "start_step":
			opts.StartStep, _ = strconv.Atoi(v)
		case "end_step":
			opts.EndStep, _ = strconv.Atoi(v)
		case "cancel_when_started":
			cancelWhen = v
		}
	}
	res, err, snap := impl(t, r, p, task, initial, opts, cancelWhen)
	fmt.Fprintf(&out, "status: %s\n", res.Status)
	if err != nil {
		fmt.Fprintf(&out, "error: %v\n", err)
	}
	out.WriteString("steps:\n")
	for _, d := range task.Steps {
		var outcomes []string
		for _, e := range res.Ledger {
			if e.StepID == d.ID {
				outcomes = append(outcomes, e.Outcome)
			}
		}
		if len(outcomes) == 0 {
			outcomes = []string{"not run"}
		}
		fmt.Fprintf(&out, "  %s: %s\n", d.ID, strings.Join(outcomes, ", "))
	}
	md := snap["metadata"].(map[string]any)
	if fs, ok := md["failed_steps"].([]any); ok {
		out.WriteString("failed_steps:\n")
		for _, f := range fs {
			m := f.(map[string]any)
			fmt.Fprintf(&out, "  %s (%s) fatal=%v retried=%v: %s\n", m["step_id"], m["error_type"], m["is_fatal"], m["retried"] == true, m["error"])
		}
	}
	if rr, ok := md["retry_resets"].([]any); ok {
		out.WriteString("retry_resets:\n")
		for _, f := range rr {
			m := f.(map[string]any)
			fmt.Fprintf(&out, "  attempt %v: %s from %s, replayed %v\n", m["attempt"], m["step_id"], m["retry_from_step_id"], m["replayed"])
		}
	}
	var keys []string
	for k := range md {
		if strings.HasPrefix(k, "out_") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		b, _ := json.Marshal(md[k])
		fmt.Fprintf(&out, "metadata.%s = %s\n", k, b)
	}
	return out.String()
}

func TestRunRecordsInstance(t *testing.T) {
	ctx := context.Background()
	docs, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "documents.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer docs.Close()
	p := newProbe()
	r := runner.New(&runner.Options{Steps: probeRegistry(p)})
	task, err := r.ParseTask("rec", 3, []byte(`[
	  {"id":"a","type":"probe","set":{"out_a":1}},
	  {"id":"b","type":"probe","fail":true,"fail_task_on_error":false},
	  {"id":"c","type":"probe","set":{"out_c":"x"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.NewRunContext(map[string]any{"metadata": map[string]any{
		"user_overrides": map[string]any{"litellm_api_key": "sk-secret"}}}, nil)
	res, err := r.Run(ctx, task, rc, &runner.RunOptions{Documents: docs})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.InstanceID, "rec-") || len(res.InstanceID) != len("rec-")+8 {
		t.Errorf("instance id %q", res.InstanceID)
	}
	inst, err := runner.GetInstance(ctx, docs, res.InstanceID)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Status != runner.StatusCompleted || inst.CurrentStep != 3 || inst.TotalSteps != 3 || inst.TaskVersion != 3 || inst.CompletedAtUTC == nil {
		t.Errorf("instance %+v", inst)
	}
	want := []runner.CompletedStep{{StepID: "a", Status: "success"}, {StepID: "b", Status: "failure"}, {StepID: "c", Status: "success"}}
	if fmt.Sprint(inst.CompletedSteps) != fmt.Sprint(want) {
		t.Errorf("completed_steps %v", inst.CompletedSteps)
	}
	md := inst.Context["metadata"].(map[string]any)
	if md["out_a"] != 1.0 || md["out_c"] != "x" || md["instance_id"] != res.InstanceID {
		t.Errorf("recorded metadata %v", md)
	}
	if fs, _ := md["failed_steps"].([]any); len(fs) != 1 {
		t.Errorf("failed_steps %v", md["failed_steps"])
	}
	b, _ := json.Marshal(inst)
	if bytes.Contains(b, []byte("sk-secret")) {
		t.Error("the API key reached the stored instance")
	}

	// A caller-supplied id is an upsert bumping run_generation.
	p2 := newProbe()
	r2 := runner.New(&runner.Options{Steps: probeRegistry(p2)})
	task2, _ := r2.ParseTask("rec", 3, []byte(`[{"id":"a","type":"probe","fail":true}]`))
	_, err = r2.Run(ctx, task2, runner.NewRunContext(nil, nil), &runner.RunOptions{Documents: docs, InstanceID: res.InstanceID})
	if err == nil {
		t.Fatal("want a fatal error")
	}
	inst, _ = runner.GetInstance(ctx, docs, res.InstanceID)
	if inst.Status != runner.StatusFailed || inst.RunGeneration != 1 || inst.Error == nil || !strings.Contains(*inst.Error, "probe a failed") {
		t.Errorf("re-run instance: status=%s gen=%d err=%v", inst.Status, inst.RunGeneration, inst.Error)
	}
}

func TestRegistryPanics(t *testing.T) {
	reg := runner.NewStepRegistry()
	reg.Register(runner.StepInfo{Type: "x", New: func() runner.Step { return &probeStep{} }})
	for name, info := range map[string]runner.StepInfo{
		"duplicate": {Type: "x", New: func() runner.Step { return &probeStep{} }},
		"bad name":  {Type: "Bad-Name", New: func() runner.Step { return &probeStep{} }},
		"no New":    {Type: "y"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			reg.Register(info)
		}()
	}
	if _, err := reg.Lookup("nope"); !errors.Is(err, runner.ErrUnknownStepType) {
		t.Errorf("Lookup: %v", err)
	}
}

func TestJournal(t *testing.T) {
	ctx := context.Background()
	docs, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "documents.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer docs.Close()
	r := runner.New(&runner.Options{Steps: probeRegistry(newProbe())})
	task, _ := r.ParseTask("j", 1, []byte(`[{"id":"a","type":"probe","set":{"out_a":1}},{"id":"b","type":"probe","set":{"out_b":[1,2]}}]`))
	rc := runner.NewRunContext(map[string]any{"metadata": map[string]any{"user_overrides": map[string]any{"litellm_api_key": "sk-x"}}}, nil)
	res, err := r.Run(ctx, task, rc, &runner.RunOptions{Documents: docs})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := docs.QueryRecords(ctx, registry.TaskStepJournal, &registry.RecordQuery{Where: map[string]any{"instance_id": res.InstanceID}, OrderBy: "seq"})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	rebuilt := map[string]any{}
	for _, rec := range recs {
		var e struct {
			StepID string     `json:"step_id"`
			Ops    runner.Ops `json:"ops"`
		}
		if err := rec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, e.StepID)
		e.Ops.Apply(rebuilt)
		if bytes.Contains(rec.Data, []byte("sk-x")) {
			t.Error("a secret reached the journal")
		}
	}
	if fmt.Sprint(steps) != "[__seed__ a b]" {
		t.Errorf("journal steps %v", steps)
	}
	// Replaying the journal gives the recorded context.
	inst, _ := runner.GetInstance(ctx, docs, res.InstanceID)
	a, _ := json.Marshal(rebuilt)
	b, _ := json.Marshal(inst.Context)
	if !bytes.Equal(a, b) {
		t.Errorf("replayed journal\n%s\nrecorded\n%s", a, b)
	}
}
