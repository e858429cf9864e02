package process

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentenv/agentenv/runner"
)

// goStep is an in-process step running fn with its "do" field: the test
// changes the run context between plugin steps, and records what it was.
type goStep struct {
	Do string `json:"do"`
	fn func(rc *runner.RunContext, do string)
}

func (g *goStep) Run(_ context.Context, rc *runner.RunContext) error {
	g.fn(rc, g.Do)
	return nil
}

func goStepInfo(typ string, fn func(rc *runner.RunContext, do string)) runner.StepInfo {
	return runner.StepInfo{Type: typ, New: func() runner.Step { return &goStep{fn: fn} }}
}

// chain is a task whose steps run one after another: each "type:do" or
// "type:do:tolerated" item is a step with id s<i>, or the id given as
// "id=type:do".
func chain(items ...string) []byte {
	var steps []string
	for i, it := range items {
		id := fmt.Sprint("s", i)
		if name, rest, ok := strings.Cut(it, "="); ok {
			id, it = name, rest
		}
		parts := strings.Split(it, ":")
		s := fmt.Sprintf(`{"id":%q,"type":%q`, id, parts[0])
		if len(parts) > 1 && parts[1] != "" {
			s += fmt.Sprintf(`,"do":%q`, parts[1])
		}
		if len(parts) > 2 {
			s += `,"fail_task_on_error":false`
		}
		steps = append(steps, s+"}")
	}
	return []byte("[" + strings.Join(steps, ",") + "]")
}

// normal is v as decoded JSON (numbers float64), for comparisons.
func normal(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal(mustJSON(v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A plugin that declares context_deltas reconstructs the exact run
// context of every step from one whole copy and the deltas after it:
// through added, changed and removed keys, grown and shrunk lists, a
// verification, the plugin dropping its copy (it asks for the whole
// context again) and a restart after a crash (the new process gets the
// whole context). A second run on the same process is a delta from the
// first run's context.
func TestContextDeltas(t *testing.T) {
	spec, opts := testSpec(t, "tp", "delta")
	set := Load(context.Background(), []Spec{spec}, opts)
	t.Cleanup(func() { checkClosed(t, set) })
	if errs := set.Errs(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if !set.Plugins[0].Description.ContextDeltas {
		t.Fatal("the test plugin does not declare context_deltas")
	}
	var mu sync.Mutex
	snaps := map[string]any{} // mirror step id -> the context before it
	builtin := runner.NewStepRegistry()
	builtin.Register(goStepInfo("snap", func(rc *runner.RunContext, do string) {
		mu.Lock()
		defer mu.Unlock()
		snaps[do] = normal(t, rc.SafeSnapshot())
	}))
	builtin.Register(goStepInfo("mutate", func(rc *runner.RunContext, do string) {
		switch do {
		case "grow":
			rc.SetMetadata("x", map[string]any{"a": 1, "b": []any{1, 2}, "c": map[string]any{"d": "e"}})
			rc.AppendMetadata("log", "one")
			rc.AppendMetadata("log", "one") // a repeated element is kept
		case "shrink":
			rc.SetMetadata("x", map[string]any{"a": 2, "b": []any{1, 2, 3}}) // c removed, b grown
			rc.AppendMetadata("log", "two")
			rc.SetMetadata("l", []any{1, 2, 3})
		case "cut":
			rc.SetMetadata("l", []any{9}) // a shorter list is set whole
			rc.SetMetadata("x", "now a string")
			rc.SetVerification("v1", runner.Verification{Score: 1, Results: []runner.Row{{"id": "r", "result": true}}})
		case "again":
			rc.SetMetadataEntry("y", "z", nil)
		}
	}))
	r := runner.New(&runner.Options{Steps: register(t, set, builtin).Steps()})
	task, err := r.ParseTask("t", 1, chain(
		"snap:m1", "m1=mirror",
		"mutate:grow", "snap:m2", "m2=mirror",
		"mutate:shrink", "snap:m3", "m3=mirror",
		"mutate:cut", "snap:m4", "m4=mirror",
		"forget", "mutate:again", "snap:m5", "m5=mirror",
		"crash::tolerated", "snap:m6", "m6=mirror",
		"mutate:grow", "snap:m7", "m7=mirror",
	))
	if err != nil {
		t.Fatal(err)
	}
	check := func(rc *runner.RunContext, want map[string]string) {
		t.Helper()
		for id, how := range want {
			md, _ := rc.Metadata(id)
			m, _ := md.(map[string]any)
			if m["how"] != how {
				t.Errorf("%s: got the context %v, want %s", id, m["how"], how)
			}
			if got := normal(t, m["saw"]); !reflect.DeepEqual(got, snaps[id]) {
				t.Errorf("%s: the plugin's context differs from the run's:\n got %s\nwant %s", id, mustJSON(got), mustJSON(snaps[id]))
			}
		}
	}
	rc := runner.NewRunContext(map[string]any{"metadata": map[string]any{"seed": map[string]any{"k": "v"}}}, nil)
	if _, err := r.Run(context.Background(), task, rc, nil); err != nil {
		t.Fatal(err)
	}
	check(rc, map[string]string{"m1": "full", "m2": "delta", "m3": "delta", "m4": "delta",
		"m5": "full", // the plugin dropped its copy: it answered "resync" and got the whole context
		"m6": "full", // a new process after the crash
		"m7": "delta"})
	if n := len(set.Plugins[0].Plugin.pids()); n != 2 {
		t.Errorf("%d processes, want 2 (one restart after the crash)", n)
	}

	// A second run on the same process: its first step is a delta from
	// the first run's context (keys of the first run deleted).
	task2, err := r.ParseTask("t2", 1, chain("snap:n1", "n1=mirror", "mutate:shrink", "snap:n2", "n2=mirror"))
	if err != nil {
		t.Fatal(err)
	}
	rc2 := runner.NewRunContext(nil, nil)
	if _, err := r.Run(context.Background(), task2, rc2, nil); err != nil {
		t.Fatal(err)
	}
	check(rc2, map[string]string{"n1": "delta", "n2": "delta"})
}

// A plugin that does not declare context_deltas (the protocol before
// them) gets the whole context on every step, and no new field.
func TestNoContextDeltasWithoutDeclaring(t *testing.T) {
	_, r := loadTest(t, "ok", 0, nil)
	task, err := r.ParseTask("t", 1, chain("m1=mirror", "m2=mirror"))
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.NewRunContext(nil, nil)
	if _, err := r.Run(context.Background(), task, rc, nil); err != nil {
		t.Fatal(err)
	}
	md, _ := rc.Metadata("m2")
	saw, _ := md.(map[string]any)["saw"].(map[string]any)
	m1, _ := saw["metadata"].(map[string]any)["m1"].(map[string]any)
	if m1["how"] != "full" {
		t.Errorf("the second step's context lacks the first step's metadata: %v", saw)
	}
}

// The Python example keeps its copy of the run context: dice_grade reads
// a roll written by an earlier step from a delta, and after the plugin
// process was killed the new process is sent the whole context again.
func TestPythonExampleContextDeltas(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	set := Load(context.Background(), []Spec{{Name: "dice", Command: []string{"../../examples/plugins/dice/agentenv-plugin-dice"}}}, nil)
	t.Cleanup(func() { checkClosed(t, set) })
	if errs := set.Errs(); len(errs) > 0 {
		t.Fatal(errs)
	}
	p := set.Plugins[0].Plugin
	if !set.Plugins[0].Description.ContextDeltas {
		t.Fatal("the dice example does not declare context_deltas")
	}
	builtin := runner.NewStepRegistry()
	builtin.Register(goStepInfo("kill_plugin", func(*runner.RunContext, string) {
		p.mu.Lock()
		pr := p.cur
		p.mu.Unlock()
		_ = syscall.Kill(pr.cmd.Process.Pid, syscall.SIGKILL)
		<-pr.exited
	}))
	r := runner.New(&runner.Options{Steps: register(t, set, builtin).Steps()})
	grade := func(id, roll string) string {
		return fmt.Sprintf(`{"id":%q,"type":"dice_grade","verifier_id":%q,"roll_step_id":%q,"at_least":1}`, id, id, roll)
	}
	task, err := r.ParseTask("t", 1, []byte(`[
		{"id":"r1","type":"dice_roll","count":2},`+grade("g1", "r1")+`,
		{"id":"r2","type":"dice_roll","count":3},`+grade("g2", "r2")+`,
		{"id":"k","type":"kill_plugin"},
		{"id":"r3","type":"dice_roll","count":4},`+grade("g3", "r3")+`]`))
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.NewRunContext(nil, nil)
	if _, err := r.Run(context.Background(), task, rc, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ grade, roll string }{{"g1", "r1"}, {"g2", "r2"}, {"g3", "r3"}} {
		v, err := rc.Verification(c.grade)
		md, _ := rc.Metadata(c.roll)
		total := md.(map[string]any)["total"]
		if err != nil || len(v.Results) != 1 || v.Results[0]["total"] != total {
			t.Errorf("%s: verification %+v (%v), want the total of %s, %v", c.grade, v, err, c.roll, total)
		}
	}
	if n := len(p.pids()); n != 2 {
		t.Errorf("%d dice processes, want 2 (one restart)", n)
	}
}
