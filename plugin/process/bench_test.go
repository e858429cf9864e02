package process

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
)

// stepsN is a task of n steps of type typ, run one after another.
func stepsN(typ string, n int) []byte {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		if typ == "dice_roll" {
			fmt.Fprintf(&b, `{"id":"s%d","type":"%s","count":1}`, i, typ)
			continue
		}
		fmt.Fprintf(&b, `{"id":"s%d","type":"%s","n":%d}`, i, typ, i)
	}
	b.WriteString("]")
	return []byte(b.String())
}

// inProcessEcho is the in-process twin of the test plugin's echo step: the
// floor the plugin's per-step cost is measured against.
type inProcessEcho struct {
	N int `json:"n"`
}

func (e *inProcessEcho) Run(_ context.Context, rc *runner.RunContext) error {
	rc.SetMetadata(rc.StepID(), map[string]any{"n": e.N, "seen": []any{nil}})
	return nil
}

// TestTwoHundredStepsOneProcess runs 200 plugin steps in one task: every
// step's operations land, and one process served them all.
func TestTwoHundredStepsOneProcess(t *testing.T) {
	set, r := loadTest(t, "ok", 0, nil)
	task, err := r.ParseTask("t", 1, stepsN("echo", 200))
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.NewRunContext(nil, nil)
	if _, err := r.Run(context.Background(), task, rc, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		md, _ := rc.Metadata(fmt.Sprintf("s%d", i))
		if m, _ := md.(map[string]any); m["n"] != float64(i) {
			t.Fatalf("metadata.s%d = %v", i, md)
		}
	}
	if n := len(set.Plugins[0].Plugin.pids()); n != 1 {
		t.Errorf("%d plugin processes for one task, want 1", n)
	}
}

// gradesN is a task of one dice_roll and n-1 dice_grade steps, each
// grade reading the roll from the run context (which grows by one
// verification per step).
func gradesN(n int) []byte {
	var b strings.Builder
	b.WriteString(`[{"id":"s0","type":"dice_roll","count":2}`)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, `,{"id":"s%d","type":"dice_grade","verifier_id":"s%d","roll_step_id":"s0","at_least":1}`, i, i)
	}
	b.WriteString("]")
	return []byte(b.String())
}

// BenchmarkTwoHundredSteps runs a task of 200 steps through one plugin
// process, and through an in-process step doing the same context write
// (inprocess, the floor); per-step overhead = (case - inprocess) / 200.
// Cases, before and after context deltas in the same run:
//
//	plugin-full    the Go test plugin's echo, sent the whole context
//	plugin-delta   the same, from the plugin declaring context_deltas
//	python-none    the Python example's dice_roll, which asks for no context
//	python-full    its dice_grade (reads the context), context_deltas = false
//	python-delta   the same with context deltas (the example's default)
func BenchmarkTwoHundredSteps(b *testing.B) {
	dice := func(b *testing.B, settings map[string]any) *Set {
		if _, err := exec.LookPath("python3"); err != nil {
			b.Skip("python3 is not installed")
		}
		return Load(context.Background(), []Spec{{Name: "dice", Settings: settings,
			Command: []string{"../../examples/plugins/dice/agentenv-plugin-dice"}}}, nil)
	}
	for _, kind := range []string{"inprocess", "plugin-full", "plugin-delta", "python-none", "python-full", "python-delta"} {
		b.Run(kind, func(b *testing.B) {
			reg := runner.NewStepRegistry()
			task := stepsN("echo", 200)
			var set *Set
			switch kind {
			case "inprocess":
				task = stepsN("go_echo", 200)
				reg.Register(runner.StepInfo{Type: "go_echo", New: func() runner.Step { return &inProcessEcho{} }})
			case "plugin-full", "plugin-delta":
				spec, opts := testSpec(b, "tp", map[string]string{"plugin-full": "ok", "plugin-delta": "delta"}[kind])
				set = Load(context.Background(), []Spec{spec}, opts)
			case "python-none":
				task, set = stepsN("dice_roll", 200), dice(b, nil)
			case "python-full":
				task, set = gradesN(200), dice(b, map[string]any{"context_deltas": false})
			case "python-delta":
				task, set = gradesN(200), dice(b, nil)
			}
			if set != nil {
				defer set.Close()
				if errs := set.Errs(); len(errs) > 0 {
					b.Fatal(errs)
				}
				reg = register(b, set, reg).Steps()
			}
			r := runner.New(&runner.Options{Steps: reg})
			parsed, err := r.ParseTask("t", 1, task)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				rc := runner.NewRunContext(nil, nil)
				if _, err := r.Run(context.Background(), parsed, rc, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/200, "µs/step")
		})
	}
}

// BenchmarkCall is one step/run round trip on a running plugin, with an
// empty run context and with one holding 200 steps' metadata (what the
// last step of a 200-step task is sent).
func BenchmarkCall(b *testing.B) {
	spec, opts := testSpec(b, "tp", "ok")
	set := Load(context.Background(), []Spec{spec}, opts)
	defer set.Close()
	p := set.Plugins[0].Plugin
	big := map[string]any{}
	for i := range 200 {
		big[fmt.Sprint("s", i)] = map[string]any{"n": i, "seen": []any{nil}}
	}
	for _, c := range []struct {
		name string
		ctx  map[string]any
	}{{"empty-context", nil}, {"context-200-steps", map[string]any{"metadata": big}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := p.Call(context.Background(), MethodStepRun, RunParams{Type: "echo", StepID: "x", Token: "t", Context: c.ctx}, &RunResult{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
