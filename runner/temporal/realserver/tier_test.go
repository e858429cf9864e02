package realserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// slowTask deploys a local sandbox, then verifies with a command that
// takes secs seconds and passes when pass is set.
func slowTask(secs int, pass bool) string {
	cmd := fmt.Sprintf("sleep %d && %t", secs, pass)
	return `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm","sandbox_type":"local"},
	 {"id":"check","type":"verify_sandbox","sandbox_name":"box","verifier_id":"v",
	  "criteria":[{"type":"bash_cmd_succeeds","criterion":"slow check","bash_cmd":"` + cmd + `"}]}]`
}

// createTask stores steps under id.
func (c *cluster) createTask(ctx context.Context, id, steps string) {
	c.t.Helper()
	f := filepath.Join(c.dir, strings.ReplaceAll(id, "/", "_")+".json")
	if err := os.WriteFile(f, []byte(steps), 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.mustRun(ctx, nil, "task", "create", f, "--id", id)
}

// evalStats is what a score comparison needs of `eval run --json`.
type evalStats struct {
	Tasks []struct {
		TaskID    string   `json:"task_id"`
		Runs      int      `json:"runs"`
		Passed    int      `json:"passed"`
		MeanScore float64  `json:"mean_score"`
		PassAt1   *float64 `json:"pass_at_1"`
		PassAtK   *float64 `json:"pass_at_k"`
	} `json:"tasks"`
	Runs []struct {
		Outcome string `json:"outcome"`
	} `json:"runs"`
	TornDown int `json:"torn_down"`
}

func (s evalStats) table() string {
	var b strings.Builder
	for _, t := range s.Tasks {
		fmt.Fprintf(&b, "%s runs=%d passed=%d mean=%.3f pass@1=%.3f pass@k=%.3f\n", t.TaskID, t.Runs, t.Passed, t.MeanScore, *t.PassAt1, *t.PassAtK)
	}
	return b.String()
}

func (c *cluster) evalRun(ctx context.Context, extraEnv []string, id string, k int) evalStats {
	c.t.Helper()
	cmd := append([]string(nil), "eval", "run", "--id", id, "--k", fmt.Sprint(k), "--max-concurrency", "8",
		"--output-dir", filepath.Join(c.dir, "out-"+id), "--json")
	x := exec.CommandContext(ctx, c.bin, cmd...)
	x.Env = append(append([]string(nil), c.env...), extraEnv...)
	var stderr strings.Builder
	x.Stderr = &stderr
	out, err := x.Output() // --json: the report alone on stdout
	var s evalStats
	if jerr := json.Unmarshal(out, &s); jerr != nil {
		c.t.Fatalf("eval run %s (%v): %v\n%s\n%s", id, err, jerr, out, stderr.String())
	}
	if strings.Contains(strings.Join(extraEnv, " "), "AGENT_ENV_RUNNER=local") == strings.Contains(stderr.String(), "Submitting runs to Temporal") {
		c.t.Errorf("eval run %s with %v: the runner was not the one asked for:\n%s", id, extraEnv, stderr.String())
	}
	return s
}

// An eval of the hello example bundle and a failing task, k=8, submitted
// to Temporal and spread over two worker processes, scores exactly as the
// local runner does, and every run's sandbox is torn down.
func TestEvalOnTwoWorkersScoresAsLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := newCluster(t)
	local := []string{"AGENT_ENV_RUNNER=local"}
	// `run hello` stores the example bundle's task (locally, once).
	c.mustRun(ctx, local, "run", "hello")
	c.createTask(ctx, "tier/never", slowTask(0, false))
	f := filepath.Join(c.dir, "eval.json")
	if err := os.WriteFile(f, []byte(`[{"task_id":"@local/agentenv-framework/hello/hello"},{"task_id":"tier/never"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustRun(ctx, nil, "eval", "create", f, "--id", "tier")

	want := c.evalRun(ctx, local, "tier", 8)
	w1, w2 := c.startWorker("w1", 4), c.startWorker("w2", 4)
	got := c.evalRun(ctx, nil, "tier", 8)
	if got.table() != want.table() {
		t.Errorf("scores on Temporal differ from the local runner's\n--- temporal ---\n%s--- local ---\n%s", got.table(), want.table())
	}
	if len(got.Runs) != 16 || got.TornDown != 16 {
		t.Errorf("temporal eval: %d runs, %d sandboxes torn down; want 16 and 16", len(got.Runs), got.TornDown)
	}
	if !strings.Contains(want.table(), "hello/hello runs=8 passed=8 mean=1.000") || !strings.Contains(want.table(), "tier/never runs=8 passed=0 mean=0.000") {
		t.Errorf("local scores:\n%s", want.table())
	}
	for _, w := range []*worker{w1, w2} {
		if b, _ := os.ReadFile(w.log); strings.Contains(string(b), "panic") {
			t.Errorf("worker log %s:\n%s", w.log, b)
		}
	}
	c.waitNoSandboxes(10 * time.Second)
}

// A worker killed with SIGKILL mid-run: its steps are retried on the
// other worker once its heartbeats stop, every run completes and passes,
// and no sandbox is left behind.
func TestKilledWorkerRunsComplete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := newCluster(t)
	c.createTask(ctx, "tier/slow", slowTask(4, true))
	victim := c.startWorker("victim", 2)
	c.startWorker("survivor", 2)
	ids := submittedIDs(c.mustRun(ctx, nil, "task", "run", "tier/slow", "--k", "8", "--detach"))
	if len(ids) != 8 {
		t.Fatalf("submitted %d runs, want 8", len(ids))
	}
	// Each worker runs 2 steps at once and 8 runs wait for them, so once
	// 4 sandboxes exist both workers hold runs mid-way: kill one.
	c.waitSandboxes(4, 2*time.Minute)
	victim.kill9(t)
	for _, id := range ids {
		out := c.waitStatus(ctx, id, "completed", "failed", "cancelled", "terminated", "timed_out")
		if !strings.Contains(out, "Status: completed\n") || !strings.Contains(out, "check: success") {
			t.Errorf("run %s after a worker was killed:\n%s", id, out)
		}
	}
	c.waitNoSandboxes(30 * time.Second)
}

// Cancelling a run stops its running step and tears its sandbox down.
func TestCancelTearsDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newCluster(t)
	c.createTask(ctx, "tier/long", slowTask(300, true))
	c.startWorker("w1", 4)
	ids := submittedIDs(c.mustRun(ctx, nil, "task", "run", "tier/long", "--k", "2", "--detach"))
	if len(ids) != 2 {
		t.Fatalf("submitted %d runs, want 2", len(ids))
	}
	c.waitSandboxes(2, 2*time.Minute)
	for _, id := range ids {
		if out := c.mustRun(ctx, nil, "task", "cancel", id); !strings.Contains(out, "Cancel requested: "+id) {
			t.Errorf("task cancel %s: %s", id, out)
		}
	}
	for _, id := range ids {
		c.waitStatus(ctx, id, "cancelled")
	}
	c.waitNoSandboxes(30 * time.Second)
}

// A task whose step would use the local-only process provider is refused
// at submit, naming the step, before any run starts.
func TestProcessProviderRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := newCluster(t)
	c.createTask(ctx, "tier/quick", slowTask(0, true))
	out, err := c.run(ctx, nil, "task", "run", "tier/quick", "--sandbox", "process")
	if err == nil || !strings.Contains(out, `step 1 (id "box", deploy_sandbox)`) || !strings.Contains(out, `"process"`) {
		t.Fatalf("task run --sandbox process on Temporal: %v\n%s", err, out)
	}
	if strings.Contains(out, "Submitted run") {
		t.Errorf("a refused task was submitted:\n%s", out)
	}
}
