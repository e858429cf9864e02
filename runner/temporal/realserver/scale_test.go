package realserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// TestScale measures AGENTENV_TEMPORAL_SCALE runs (e.g. 1000) of the
// hello bundle (local sandbox: a work folder) on two agent-env workers
// against the same runs on the local runner: runs per second, the p99
// delay between a step being scheduled and a worker starting it, and the
// per-step overhead. It logs figures and asserts only that every run
// passed: timing never decides pass or fail.
func TestScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("AGENTENV_TEMPORAL_SCALE"))
	if n <= 0 {
		t.Skip("AGENTENV_TEMPORAL_SCALE (a number of runs) is unset")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	c := newCluster(t)
	local := []string{"AGENT_ENV_RUNNER=local"}
	c.mustRun(ctx, local, "run", "hello")
	f := filepath.Join(c.dir, "eval.json")
	if err := os.WriteFile(f, []byte(`[{"task_id":"@local/agentenv-framework/hello/hello"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustRun(ctx, nil, "eval", "create", f, "--id", "scale")
	t.Logf("load average at start: %s", loadAvg())
	const conc = 32
	// One run at a time first: a run's time is then its steps' and the
	// runner's, with no queueing behind other runs, which is what the
	// per-step overhead compares.
	const serial = 20
	_, lserial := c.timedEval(ctx, local, serial, 1)
	lw, lruns := c.timedEval(ctx, local, n, conc)
	c.startWorker("w1", 16)
	c.startWorker("w2", 16)
	_, tserial := c.timedEval(ctx, nil, serial, 1)
	tw, truns := c.timedEval(ctx, nil, n, conc)
	t.Logf("load average at end: %s", loadAvg())

	tc, err := client.Dial(client.Options{HostPort: c.srv.Address, Namespace: c.srv.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	var delays []time.Duration
	for _, r := range truns {
		sched := map[int64]time.Time{}
		it := tc.GetWorkflowHistory(ctx, r.InstanceID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				sched[e.GetEventId()] = e.GetEventTime().AsTime()
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				if s, ok := sched[e.GetActivityTaskStartedEventAttributes().GetScheduledEventId()]; ok {
					delays = append(delays, e.GetEventTime().AsTime().Sub(s))
				}
			}
		}
	}
	slices.Sort(delays)
	p := func(q float64) time.Duration { return delays[min(len(delays)-1, int(q*float64(len(delays))))] }
	mean := func(runs []scaleRun) float64 {
		s := 0.0
		for _, r := range runs {
			s += r.Seconds
		}
		return s / float64(len(runs))
	}
	const steps = 3 // deploy_sandbox, load_artifact, verify_sandbox
	t.Logf("runs: %d of hello, %d at once; local runner: %.1f runs/s, mean run %.3fs", n, conc, float64(n)/lw.Seconds(), mean(lruns))
	t.Logf("temporal, 2 workers x 16 steps: %.1f runs/s, mean run %.3fs; activity schedule-to-start p50 %s p99 %s (%d activities)",
		float64(n)/tw.Seconds(), mean(truns), p(0.5), p(0.99), len(delays))
	t.Logf("one run at a time (%d runs each): mean run local %.3fs, temporal %.3fs; overhead per step %.0f ms",
		serial, mean(lserial), mean(tserial), (mean(tserial)-mean(lserial))/steps*1000)
	t.Logf("%d at once: overhead per step (mean run, temporal - local, / %d steps): %.0f ms", conc, steps, (mean(truns)-mean(lruns))/steps*1000)
	for _, r := range slices.Concat(lserial, lruns, tserial, truns) {
		if r.Outcome != "passed" {
			t.Errorf("run %s: %s", r.InstanceID, r.Outcome)
		}
	}
}

// loadAvg is the first three fields of /proc/loadavg ("" where absent).
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

type scaleRun struct {
	InstanceID string  `json:"instance_id"`
	Outcome    string  `json:"outcome"`
	Seconds    float64 `json:"seconds"`
}

// timedEval runs the scale eval k times and returns its wall time and runs.
func (c *cluster) timedEval(ctx context.Context, extraEnv []string, k, conc int) (time.Duration, []scaleRun) {
	c.t.Helper()
	x := exec.CommandContext(ctx, c.bin, "eval", "run", "--id", "scale", "--k", fmt.Sprint(k), "--max-concurrency", fmt.Sprint(conc),
		"--output-dir", filepath.Join(c.dir, "out-scale"), "--json")
	x.Env = append(append([]string(nil), c.env...), extraEnv...)
	var stderr strings.Builder
	x.Stderr = &stderr
	start := time.Now()
	out, err := x.Output()
	wall := time.Since(start)
	var rep struct {
		Runs []scaleRun `json:"runs"`
	}
	if jerr := json.Unmarshal(out, &rep); jerr != nil || len(rep.Runs) != k {
		c.t.Fatalf("eval run (%v): %v, %d runs\n%s", err, jerr, len(rep.Runs), stderr.String())
	}
	return wall, rep.Runs
}
