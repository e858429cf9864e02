package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/runner"
)

// dagTracker observes the steps of one generated DAG run.
type dagTracker struct {
	mu       sync.Mutex
	seq      int
	startSeq map[string]int
	endSeq   map[string]int
	runs     map[string]int
	inFlight int
	maxIn    int
	started  map[string]chan struct{}
	problems []string
}

func (tr *dagTracker) startedCh(id string) chan struct{} {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	ch, ok := tr.started[id]
	if !ok {
		ch = make(chan struct{})
		tr.started[id] = ch
	}
	return ch
}

// dagStep checks at start that its dependencies are done, optionally waits
// until its siblings have started (which only completes when they run
// concurrently), and records its start and end order.
type dagStep struct {
	Deps     []string `json:"deps"`
	Siblings []string `json:"siblings"`
	tr       *dagTracker
}

func (s *dagStep) Run(ctx context.Context, rc *runner.RunContext) error {
	id := rc.StepID()
	tr := s.tr
	tr.mu.Lock()
	tr.seq++
	tr.startSeq[id] = tr.seq
	tr.runs[id]++
	tr.inFlight++
	tr.maxIn = max(tr.maxIn, tr.inFlight)
	for _, d := range s.Deps {
		if _, done := tr.endSeq[d]; !done {
			tr.problems = append(tr.problems, fmt.Sprintf("%s started before its dependency %s ended", id, d))
		}
	}
	tr.mu.Unlock()
	close(tr.startedCh(id))
	for _, sib := range s.Siblings {
		select {
		case <-tr.startedCh(sib):
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
			return fmt.Errorf("%s: sibling %s never started alongside it", id, sib)
		}
	}
	rc.SetMetadata("ran_"+id, true)
	tr.mu.Lock()
	tr.seq++
	tr.endSeq[id] = tr.seq
	tr.inFlight--
	tr.mu.Unlock()
	return nil
}

// TestDAG200 runs a generated 200-step DAG: 20 layers of 10 steps. In even
// layers each step depends on 1-3 random steps of any earlier layer (or,
// in layer 0, on nothing); every step of an odd layer depends on the whole
// previous layer, so the ten become ready together and each waits for its
// nine siblings to start: the run only completes if the engine runs them
// concurrently. Every step must run once, after all its dependencies.
func TestDAG200(t *testing.T) {
	const layers, width = 20, 10
	tr := &dagTracker{startSeq: map[string]int{}, endSeq: map[string]int{}, runs: map[string]int{}, started: map[string]chan struct{}{}}
	reg := runner.NewStepRegistry()
	reg.Register(runner.StepInfo{Type: "dag", New: func() runner.Step { return &dagStep{tr: tr} }})
	r := runner.New(&runner.Options{Steps: reg})

	rng := rand.New(rand.NewPCG(200, 6))
	name := func(l, j int) string { return fmt.Sprintf("L%02d-%d", l, j) }
	var steps []map[string]any
	deps := map[string][]string{}
	for l := range layers {
		for j := range width {
			id := name(l, j)
			var ds, sibs []string
			switch {
			case l == 0:
			case l%2 == 1:
				for k := range width {
					ds = append(ds, name(l-1, k))
					if k != j {
						sibs = append(sibs, name(l, k))
					}
				}
			default:
				seen := map[string]bool{}
				for range 1 + rng.IntN(3) {
					d := name(rng.IntN(l), rng.IntN(width))
					if !seen[d] {
						seen[d] = true
						ds = append(ds, d)
					}
				}
			}
			on := make([]map[string]string, 0, len(ds))
			for _, d := range ds {
				on = append(on, map[string]string{"task_step_id": d})
			}
			deps[id] = ds
			steps = append(steps, map[string]any{"id": id, "type": "dag", "depends_on": on, "deps": ds, "siblings": sibs})
		}
	}
	raw, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	task, err := r.ParseTask("dag200", 1, raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Steps) != layers*width {
		t.Fatalf("%d steps", len(task.Steps))
	}
	rc := runner.NewRunContext(nil, nil)
	res, err := r.Run(context.Background(), task, rc, nil)
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("run: %v %+v", err, res)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, p := range tr.problems {
		t.Error(p)
	}
	for id, ds := range deps {
		if tr.runs[id] != 1 {
			t.Errorf("%s ran %d times", id, tr.runs[id])
		}
		for _, d := range ds {
			if tr.endSeq[d] >= tr.startSeq[id] {
				t.Errorf("%s (start #%d) did not wait for %s (end #%d)", id, tr.startSeq[id], d, tr.endSeq[d])
			}
		}
	}
	if tr.maxIn < width {
		t.Errorf("at most %d steps ran at once, want at least %d", tr.maxIn, width)
	}
	if len(res.Ledger) != layers*width {
		t.Errorf("ledger has %d entries", len(res.Ledger))
	}
	if got := len(rc.Snapshot()["metadata"].(map[string]any)); got < layers*width {
		t.Errorf("metadata has %d keys: some steps' writes were lost", got)
	}
}
