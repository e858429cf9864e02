package envdeploy

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// blockingGroup's workload "fail" fails at once; every other workload
// blocks until its context ends and then reports that.
type blockingGroup struct {
	returned atomic.Int32
}

var errPlanted = errors.New("planted start failure")

func (g *blockingGroup) ID() string                               { return "fake" }
func (g *blockingGroup) Logs(context.Context, string, int) string { return "" }
func (g *blockingGroup) Terminate(context.Context) error          { return nil }
func (g *blockingGroup) Run(ctx context.Context, w Workload) (Endpoint, error) {
	defer g.returned.Add(1)
	if w.Name == "fail" {
		return Endpoint{}, errPlanted
	}
	<-ctx.Done()
	return Endpoint{}, ctx.Err()
}

// TestRunAllFirstFailure: a failed start cuts the others short, runAll
// returns only once every Run has returned (so the deploy's removal sees
// everything they created), and the error is the failure itself, not the
// cancellations it caused.
func TestRunAllFirstFailure(t *testing.T) {
	g := &blockingGroup{}
	_, err := runAll(context.Background(), g, []Workload{{Name: "a"}, {Name: "fail"}, {Name: "b"}})
	if !errors.Is(err, errPlanted) || errors.Is(err, context.Canceled) {
		t.Errorf("runAll: %v, want only the planted failure", err)
	}
	if n := g.returned.Load(); n != 3 {
		t.Errorf("runAll returned while %d of 3 runs were still in flight", 3-n)
	}

	// The caller's own cancellation is reported as such.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := runAll(ctx, &blockingGroup{}, []Workload{{Name: "a"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled runAll: %v, want context.Canceled", err)
	}
}
