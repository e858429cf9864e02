package docker_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
)

// Several callers remove the same running sandbox at once (a prune racing
// a teardown, two prunes of a shared engine): the engine tells all but one
// that the removal is "already in progress". Each call must succeed once
// the container is gone, and nothing is left.
func TestConcurrentRemoval(t *testing.T) {
	p := engine(t)
	t.Cleanup(func() { p.Close() })
	ctx := context.Background()
	ref := "localhost:5000/" + envdeploytest.ProcessPrefix + "-removal/echo:v1"
	loadEchoImage(t, p, ref)
	for round := range 3 {
		sb, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: ref, Port: envdeploy.MCPPort,
			Env: map[string]string{"ENVIRONMENT_NAME": "boxed", "MCP_HOST": "0.0.0.0", "MCP_PORT": "18765"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sb.Terminate(context.Background()) })
		// Other providers (other processes in real life) reconnect to it.
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			other, err := docker.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			h, err := other.GetSandbox(ctx, sb.Handle())
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { errs[i] = h.Terminate(ctx) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Errorf("round %d: concurrent terminate: %v", round, err)
		}
		if left, _ := p.Labelled(ctx, envdeploy.LabelSandbox, sb.ID()); len(left) != 0 {
			t.Errorf("round %d: left %v", round, left)
		}
	}
}

// A CreateSandbox cancelled at any point leaves nothing behind: the
// cancel lands as soon as the engine shows the network, then the container
// (a create call still in flight in the client), or after a varying delay.
// Creates in flight complete, are recorded and are removed.
func TestCancelledCreateLeavesNothing(t *testing.T) {
	p := engine(t)
	t.Cleanup(func() { p.Close() })
	ref := "localhost:5000/" + envdeploytest.ProcessPrefix + "-cancel/echo:v1"
	loadEchoImage(t, p, ref)
	// Every sandbox of this test carries a fresh store id, so the leak
	// check sees only its own.
	store := "cancel" + strconv.FormatInt(time.Now().UnixNano(), 36)
	sp, err := docker.New(&docker.Options{StoreID: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = sp.Prune(context.Background(), func(l map[string]string) bool { return l[envdeploy.LabelStore] == store })
		sp.Close()
	})
	// seen cancels once the engine lists a resource of the store whose
	// description starts with kind.
	seen := func(kind string) func(ctx context.Context, cancel func()) {
		return func(ctx context.Context, cancel func()) {
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			deadline := time.NewTimer(30 * time.Second)
			defer deadline.Stop()
			for {
				left, _ := p.Labelled(context.Background(), envdeploy.LabelStore, store)
				for _, l := range left {
					if strings.HasPrefix(l, kind) {
						cancel()
						return
					}
				}
				select {
				case <-tick.C:
				case <-ctx.Done():
					return
				case <-deadline.C:
					cancel()
					return
				}
			}
		}
	}
	after := func(d time.Duration) func(ctx context.Context, cancel func()) {
		return func(ctx context.Context, cancel func()) {
			tm := time.NewTimer(d)
			defer tm.Stop()
			select {
			case <-tm.C:
				cancel()
			case <-ctx.Done():
			}
		}
	}
	points := map[string]func(ctx context.Context, cancel func()){
		"network": seen("network"), "container": seen("container"),
		"0ms": after(0), "3ms": after(3 * time.Millisecond), "15ms": after(15 * time.Millisecond), "60ms": after(60 * time.Millisecond),
	}
	for name, trigger := range points {
		for range 2 {
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { trigger(ctx, cancel) })
			sb, err := sp.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: ref, Port: envdeploy.MCPPort,
				Env: map[string]string{"ENVIRONMENT_NAME": "boxed", "MCP_HOST": "0.0.0.0", "MCP_PORT": "18765"}})
			cancel()
			wg.Wait()
			if err == nil {
				_ = sb.Terminate(context.Background()) // it finished before the cancel
			}
			if left, lerr := p.Labelled(context.Background(), envdeploy.LabelStore, store); lerr != nil || len(left) != 0 {
				t.Errorf("cancel at %s (%v): left %v %v", name, err, left, lerr)
				_, _ = sp.Prune(context.Background(), func(l map[string]string) bool { return l[envdeploy.LabelStore] == store })
			}
		}
	}
}
