package runner_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/agentenv/agentenv/runner"
)

// Episodes leave no goroutine behind: the in-process agents, their
// servers and the turn handlers all stop with the run (abandoned or not).
func TestEpisodesLeaveNoGoroutines(t *testing.T) {
	ctx := context.Background()
	spec := twoAgentSpec(t)
	before := runtime.NumGoroutine()
	eps, err := spec.StartGroup(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i, ep := range eps {
		turn, err := ep.NextTurn(ctx)
		if err != nil || turn == nil {
			t.Fatalf("turn: %v %v", turn, err)
		}
		if i%2 == 0 { // half abandoned mid-turn, half played to the end
			if err := ep.Abandon(ctx, "test"); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for turn != nil {
			_ = turn.End(ctx, "draft approved")
			turn, _ = ep.NextTurn(ctx)
		}
		if res, err := ep.Result(ctx); err != nil || res.Status != runner.StatusCompleted {
			t.Fatalf("result %+v %v", res, err)
		}
	}
	// Poll the condition with a deadline (goroutines end asynchronously
	// after their connections close).
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > before {
		select {
		case <-deadline.C:
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:n])
		case <-tick.C:
		}
	}
}
