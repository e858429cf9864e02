package process

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

// loadTest loads the test plugin and registers its steps; the set is
// closed at the end of the test, which then checks no process is left.
func loadTest(t *testing.T, behaviour string, timeout time.Duration, log *slog.Logger) (*Set, *runner.Runner) {
	t.Helper()
	spec, opts := testSpec(t, "tp", behaviour)
	spec.Timeout = timeout
	opts.Logger = log
	set := Load(context.Background(), []Spec{spec}, opts)
	t.Cleanup(func() { checkClosed(t, set) })
	if errs := set.Errs(); len(errs) > 0 {
		t.Fatalf("Load: %v", errs)
	}
	return set, runner.New(&runner.Options{Steps: register(t, set, runner.NewStepRegistry()).Steps()})
}

// register adds the set's plugins to a plugin registry whose built-in
// step types are builtin.
func register(t testing.TB, set *Set, builtin *runner.StepRegistry) *plugin.Registry {
	t.Helper()
	reg := plugin.NewRegistry(&plugin.Options{Steps: builtin})
	for _, l := range set.Plugins {
		if err := reg.Add(l.Registration()); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	return reg
}

// checkClosed closes the set and fails when any process it started (or
// that process's children) is still alive.
func checkClosed(t *testing.T, set *Set) {
	t.Helper()
	var pids []int
	for _, l := range set.Plugins {
		pids = append(pids, l.Plugin.pids()...)
	}
	if err := set.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for _, pid := range pids {
		if groupAlive(pid) {
			t.Errorf("plugin process group %d is still alive after Close", pid)
		}
	}
}

func TestDescribeSettingsAndSteps(t *testing.T) {
	set, r := loadTest(t, "ok", 0, nil)
	d := set.Plugins[0].Description
	if d.Name != "test" || d.Version != "1.2.3" || len(d.Steps) != 11 {
		t.Fatalf("description = %+v", d)
	}
	task, err := r.ParseTask("t", 1, []byte(`[
		{"id":"e","type":"echo","n":4},
		{"id":"g","type":"grade","depends_on":["e"]},
		{"id":"blind","type":"blind","depends_on":["g"]},
		{"id":"sighted","type":"sighted","depends_on":["g"]}]`))
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.NewRunContext(map[string]any{"metadata": map[string]any{"seed": map[string]any{"k": "v7"}}}, nil)
	res, err := r.Run(context.Background(), task, rc, nil)
	if err != nil {
		t.Fatalf("Run: %v (%+v)", err, res.Failed)
	}
	md, _ := rc.Metadata("e")
	m, _ := md.(map[string]any)
	if m["n"] != float64(4) || len(m["seen"].([]any)) != 1 || m["seen"].([]any)[0] != "v7" {
		t.Errorf("metadata.e = %v", md)
	}
	v, err := rc.Verification("g1")
	if err != nil || v.Score != 1 || len(v.Results) != 1 || rc.VerifierOwner("g1") != "g" {
		t.Errorf("verification g1 = %+v, %v (owner %q)", v, err, rc.VerifierOwner("g1"))
	}
	// A type that asked for no context gets {}; the others the document.
	for id, want := range map[string]float64{"blind": 0, "sighted": 5} {
		if md, _ := rc.Metadata(id); md.(map[string]any)["keys"] != want {
			t.Errorf("%s saw a context of %v keys, want %v", id, md, want)
		}
	}
	if n := len(set.Plugins[0].Plugin.pids()); n != 1 {
		t.Errorf("%d processes started for one run, want 1 (reused)", n)
	}
}

func TestValidateAtParse(t *testing.T) {
	_, r := loadTest(t, "ok", 0, nil)
	for _, c := range []struct{ steps, want string }{
		{`[{"id":"e","type":"echo","n":-1}]`, `field "n": must not be negative`},
		{`[{"id":"e","type":"echo","n":"x"}]`, "does not match the schema of step type echo (plugin tp)"},
		{`[{"id":"e","type":"echo","m":1}]`, "does not match the schema"},
	} {
		_, err := r.ParseTask("t", 1, []byte(c.steps))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseTask(%s) = %v, want %q", c.steps, err, c.want)
		}
	}
}

// A misbehaving step fails alone, naming the plugin; the step after it
// runs on the same plugin (a fresh process where the last one broke), and
// no process outlives the set.
func TestMisbehavingStepFailsAlone(t *testing.T) {
	for _, c := range []struct {
		typ, want, kind string
	}{
		{"crash", "exited (exit status 2); its last stderr lines: panic: something broke", "PluginError"},
		{"garbage", `wrote a line that is not a JSON-RPC message`, "PluginError"},
		{"hang", "no answer within 300ms", "Timeout"},
		{"bad_op", `returned an invalid context operation #2 (set ["deployed_envs"])`, "PluginError"},
	} {
		t.Run(c.typ, func(t *testing.T) {
			_, r := loadTest(t, "ok", 300*time.Millisecond, nil)
			task, err := r.ParseTask("t", 1, []byte(`[
				{"id":"bad","type":"`+c.typ+`","fail_task_on_error":false},
				{"id":"after","type":"echo","n":2,"depends_on":["bad"]}]`))
			if err != nil {
				t.Fatal(err)
			}
			rc := runner.NewRunContext(nil, nil)
			res, err := r.Run(context.Background(), task, rc, nil)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(res.Failed) != 1 || res.Failed[0].StepID != "bad" {
				t.Fatalf("failed = %+v", res.Failed)
			}
			f := res.Failed[0]
			if !strings.Contains(f.Error, "plugin tp: step/run: ") || !strings.Contains(f.Error, c.want) || f.ErrorType != c.kind {
				t.Errorf("error = %q (%s), want it to name the plugin and say %q (%s)", f.Error, f.ErrorType, c.want, c.kind)
			}
			if md, _ := rc.Metadata("after"); md.(map[string]any)["n"] != float64(2) {
				t.Errorf("the step after the failed one did not run: metadata.after = %v", md)
			}
			if _, ok := rc.Metadata("bad"); ok {
				t.Error("a refused step's operations were partly applied")
			}
		})
	}
}

func TestLoadFailures(t *testing.T) {
	for _, c := range []struct{ behaviour, want string }{
		{"exit", "plugin tp: plugin/describe: exited (exit status 3); its last stderr lines: cannot start: no licence"},
		{"badproto", `speaks protocol version "9"`},
	} {
		t.Run(c.behaviour, func(t *testing.T) {
			spec, opts := testSpec(t, "tp", c.behaviour)
			set := Load(context.Background(), []Spec{spec}, opts)
			errs := set.Errs()
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
				t.Errorf("Load errors = %v, want %q", errs, c.want)
			}
			checkClosed(t, set)
		})
	}
}

// captured is a slog handler that hands every record's message to a
// channel (for waiting on a plugin's notification).
type captured struct {
	mu   sync.Mutex
	msgs chan string
}

func (c *captured) Enabled(context.Context, slog.Level) bool { return true }
func (c *captured) Handle(_ context.Context, r slog.Record) error {
	c.msgs <- r.Message
	return nil
}
func (c *captured) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *captured) WithGroup(string) slog.Handler      { return c }

// Cancelling a running step reaches the plugin as $/cancelRequest, and the
// step returns the cancellation.
func TestCancelReachesPlugin(t *testing.T) {
	h := &captured{msgs: make(chan string, 64)}
	set, r := loadTest(t, "ok", 0, nil)
	task, err := r.ParseTask("t", 1, []byte(`[{"id":"s","type":"slow"}]`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for m := range h.msgs {
			if m == "running slow" {
				cancel()
				return
			}
		}
	}()
	rc := runner.NewRunContext(nil, &runner.Services{Logger: slog.New(h)})
	res, err := r.Run(ctx, task, rc, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if len(res.Ledger) != 1 || res.Ledger[0].Outcome != runner.OutcomeCancelled {
		t.Errorf("ledger = %+v", res.Ledger)
	}
	// The plugin answered the cancel, so its process stays in service.
	p := set.Plugins[0].Plugin
	if err := p.Call(context.Background(), MethodStepValidate, ValidateParams{Type: "echo"}, &ValidateResult{}); err != nil {
		t.Errorf("plugin unusable after a cancelled step: %v", err)
	}
	if n := len(p.pids()); n != 1 {
		t.Errorf("%d processes, want 1: a plugin that acknowledged the cancel is kept", n)
	}
}

// A process plugin that claims a built-in step type is refused whole,
// naming both owners, and listed with the reason; one that cannot start
// is listed inactive and reported by Check.
func TestRegistryRecords(t *testing.T) {
	spec, opts := testSpec(t, "tp", "claims")
	bad, bo := testSpec(t, "gone", "exit")
	set := Load(context.Background(), []Spec{spec}, opts)
	set2 := Load(context.Background(), []Spec{bad}, bo)
	t.Cleanup(func() { checkClosed(t, set); checkClosed(t, set2) })
	reg := plugin.NewRegistry(&plugin.Options{Steps: steps.Builtin()})
	err := reg.Add(set.Plugins[0].Registration())
	var ce *plugin.ClashError
	if !errors.As(err, &ce) || ce.Name != "deploy_env" || ce.Claimant != "tp" {
		t.Fatalf("Add = %v, want a clash over deploy_env", err)
	}
	if err := reg.Add(set2.Plugins[0].Registration()); err != nil {
		t.Fatalf("Add of an unavailable plugin: %v", err)
	}
	recs := map[string]plugin.Record{}
	for _, r := range reg.All() {
		recs[r.Name] = r
	}
	if r := recs["tp"]; r.Active || r.Kind != plugin.KindProcess || !strings.HasPrefix(r.Status, "refused: ") || !strings.Contains(r.Status, "deploy_env") {
		t.Errorf("tp record = %+v", r)
	}
	if r := recs["gone"]; r.Active || !strings.Contains(r.Status, "inactive: plugin gone: plugin/describe: exited") {
		t.Errorf("gone record = %+v", r)
	}
	if probs := reg.Check(); len(probs) != 2 {
		t.Errorf("Check = %v, want the clash and the plugin that did not start", probs)
	}
}
