package runner_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
)

type noop struct{}

func (*noop) Run(context.Context, *runner.RunContext) error { return nil }

func noopTask(b *testing.B, r *runner.Runner, shape string) *runner.Task {
	var steps []string
	for i := range 100 {
		switch shape {
		case "chain":
			steps = append(steps, fmt.Sprintf(`{"id":"s%d","type":"noop"}`, i))
		case "fanout":
			steps = append(steps, fmt.Sprintf(`{"id":"s%d","type":"noop","depends_on":[]}`, i))
		}
	}
	t, err := r.ParseTask("bench", 1, []byte("["+strings.Join(steps, ",")+"]"))
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// BenchmarkDAG100 measures the engine's overhead for a 100-step task of
// no-op steps: scheduling, per-step context snapshots and diffs, and (in
// the recorded variants) the task instance writes to SQLite.
func BenchmarkDAG100(b *testing.B) {
	reg := runner.NewStepRegistry()
	reg.Register(runner.StepInfo{Type: "noop", New: func() runner.Step { return &noop{} }})
	r := runner.New(&runner.Options{Steps: reg})
	for _, shape := range []string{"chain", "fanout"} {
		task := noopTask(b, r, shape)
		b.Run(shape+"/memory", func(b *testing.B) {
			for b.Loop() {
				if _, err := r.Run(context.Background(), task, runner.NewRunContext(nil, nil), nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/step")
		})
		b.Run(shape+"/sqlite", func(b *testing.B) {
			docs, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "d.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer docs.Close()
			for b.Loop() {
				if _, err := r.Run(context.Background(), task, runner.NewRunContext(nil, nil), &runner.RunOptions{Documents: docs}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/step")
		})
	}
}
