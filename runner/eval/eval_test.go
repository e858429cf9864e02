package eval_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/memory"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/eval"
	"github.com/agentenv/agentenv/runner/sandbox/local"
	"github.com/agentenv/agentenv/runner/steps"
)

// TestPassAtK checks the estimator against values computed by hand from
// 1 - C(n-c,k)/C(n,k).
func TestPassAtK(t *testing.T) {
	for _, tc := range []struct {
		n, c, k int
		want    float64
	}{
		{3, 2, 1, 2.0 / 3},       // c/n
		{3, 2, 3, 1},             // n-c < k
		{5, 2, 3, 0.9},           // 1 - C(3,3)/C(5,3) = 1 - 1/10
		{5, 2, 2, 0.7},           // 1 - C(3,2)/C(5,2) = 1 - 3/10
		{10, 3, 5, 1 - 21.0/252}, // 1 - C(7,5)/C(10,5)
		{4, 0, 2, 0},
		{4, 4, 1, 1},
		{1, 1, 1, 1},
	} {
		got, ok := eval.PassAtK(tc.n, tc.c, tc.k)
		if !ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("PassAtK(n=%d, c=%d, k=%d) = %v, %v; want %v", tc.n, tc.c, tc.k, got, ok, tc.want)
		}
	}
	for _, bad := range [][3]int{{3, 1, 4}, {0, 0, 1}, {3, 4, 1}, {3, 1, 0}, {3, -1, 1}} {
		if _, ok := eval.PassAtK(bad[0], bad[1], bad[2]); ok {
			t.Errorf("PassAtK%v is defined, want undefined", bad)
		}
	}
}

func TestParse(t *testing.T) {
	refs, err := eval.ParseJSON("e.json", []byte(`[{"task_id":"a"},{"task_id":"b","version":3}]`))
	if err != nil || len(refs) != 2 || refs[1] != (eval.TaskRef{TaskID: "b", TaskVersion: 3}) {
		t.Fatalf("%v %v", refs, err)
	}
	be, err := eval.ParseTOML("evals/smoke.toml", []byte("tasks = [\"a\", {task = \"b\", version = 3}]\n"))
	if err != nil || len(be.Tasks) != 2 || be.Tasks[1] != (eval.TaskRef{TaskID: "b", TaskVersion: 3}) {
		t.Fatalf("%+v %v", be, err)
	}
	for name, tc := range map[string]struct {
		json bool
		in   string
		want string
	}{
		"json not a list":   {true, `{"task_id":"a"}`, "e.json: (top level): a JSON list"},
		"json no task_id":   {true, `[{"version":1}]`, "e.json: [0].task_id: required"},
		"json unknown key":  {true, `[{"task_id":"a","versoin":1}]`, `e.json: [0]: an object with task_id and an optional version: unknown field "versoin"`},
		"json bad version":  {true, `[{"task_id":"a","version":0}]`, "e.json: [0].version: a version is 1 or more"},
		"json twice":        {true, `[{"task_id":"a"},{"task_id":"a","version":2}]`, `e.json: [1]: task "a" is listed twice (also [0])`},
		"json empty":        {true, `[]`, "e.json: (top level): an eval lists at least one task"},
		"toml no tasks":     {false, `type = "eval"`, "evals/e.toml: tasks: required"},
		"toml unknown key":  {false, "tasks = [\"a\"]\ntaks = 1\n", "evals/e.toml: (top level): unknown key(s): taks"},
		"toml bad entry":    {false, "tasks = [1]\n", "evals/e.toml: tasks[0]: a task name or {task = \"name\", version = N}"},
		"toml entry key":    {false, "tasks = [{task = \"a\", ver = 2}]\n", "evals/e.toml: tasks[0].ver: unknown key"},
		"toml twice":        {false, "tasks = [\"a\", {task = \"a\"}]\n", `evals/e.toml: tasks[1]: task "a" is listed twice`},
		"toml version type": {false, "tasks = [{task = \"a\", version = \"2\"}]\n", "evals/e.toml: tasks[0].version: an integer"},
		"toml syntax":       {false, "tasks = [\n", "evals/e.toml: (top level):"},
	} {
		var err error
		if tc.json {
			_, err = eval.ParseJSON("e.json", []byte(tc.in))
		} else {
			_, err = eval.ParseTOML("evals/e.toml", []byte(tc.in))
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, eval.ErrInvalid) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

// TestCreate: an unknown task is refused and nothing is stored; a good
// eval is stored as version 1, then 2.
func TestCreate(t *testing.T) {
	ctx := context.Background()
	docs := memory.New()
	docsFor := func(string) registry.DocumentStore { return docs }
	if _, err := docs.Put(ctx, registry.Tasks, "a", []byte(`{"type":"task","steps":[]}`), nil); err != nil {
		t.Fatal(err)
	}
	_, err := eval.Create(ctx, docs, docsFor, "e", "e.json", []eval.TaskRef{{TaskID: "a"}, {TaskID: "nope"}})
	if err == nil || !strings.Contains(err.Error(), `e.json: [1].task_id: unknown task nope`) {
		t.Errorf("unknown task: %v", err)
	}
	_, err = eval.Create(ctx, docs, docsFor, "e", "e.json", []eval.TaskRef{{TaskID: "a", TaskVersion: 2}})
	if err == nil || !strings.Contains(err.Error(), `unknown task a:2`) {
		t.Errorf("unknown version: %v", err)
	}
	if _, err := docs.Get(ctx, registry.Evals, registry.Ref{ID: "e"}); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("a refused eval was stored: %v", err)
	}
	for want := 1; want <= 2; want++ {
		e, err := eval.Create(ctx, docs, docsFor, "e", "e.json", []eval.TaskRef{{TaskID: "a", TaskVersion: 1}})
		if err != nil || e.Version != want || e.Tasks[0] != (eval.TaskRef{TaskID: "a", TaskVersion: 1}) {
			t.Fatalf("create: %+v %v", e, err)
		}
	}
	e, err := eval.Load(ctx, docs, registry.Ref{ID: "e"})
	if err != nil || e.Version != 2 || e.Type != "eval" || len(e.Tasks) != 1 {
		t.Errorf("load: %+v %v", e, err)
	}
}

// slotTask deploys a local sandbox and passes while it can take one of
// slots slot folders under dir: with mkdir atomic, exactly min(slots, k)
// of its k concurrent runs pass.
func slotTask(id, dir string, slots int) *runner.Task {
	cmd := "false"
	for i := range slots {
		cmd = "mkdir " + filepath.Join(dir, id+"-slot"+string(rune('a'+i))) + " 2>/dev/null || " + cmd
	}
	js := `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm","sandbox_type":"local"},
	 {"id":"check","type":"verify_sandbox","sandbox_name":"box","verifier_id":"v",
	  "criteria":[{"type":"bash_cmd_succeeds","criterion":"got a slot","bash_cmd":"` + cmd + `"}]}]`
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	t, err := r.ParseTask(id, 1, []byte(js))
	if err != nil {
		panic(err)
	}
	return t
}

// TestRun runs a deterministic mix (always, twice in three, never) three
// times each and checks the counts, scores and pass@k against hand
// computation, the context files, and that no sandbox is left.
func TestRun(t *testing.T) {
	ctx := context.Background()
	dir, root, outDir := t.TempDir(), t.TempDir(), t.TempDir()
	lp := local.New(root, nil)
	svc := &runner.Services{Documents: memory.New(), Sandboxes: map[string]runner.SandboxProvider{"local": lp}}
	var jobs []eval.Job
	for _, tc := range []struct {
		id    string
		slots int
	}{{"always", 3}, {"twice", 2}, {"never", 0}} {
		jobs = append(jobs, eval.Job{Task: slotTask(tc.id, dir, tc.slots), Services: svc})
	}
	var out strings.Builder
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	rep, err := eval.Run(ctx, r, jobs, &eval.RunOptions{K: 3, MaxConcurrency: 2, OutputDir: outDir, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][4]float64{ // runs, passed, pass@1, pass@3
		"always": {3, 3, 1, 1},
		"twice":  {3, 2, 2.0 / 3, 1},
		"never":  {3, 0, 0, 0},
	}
	for _, s := range rep.Stats {
		w := want[s.TaskID]
		if float64(s.Runs) != w[0] || float64(s.Passed) != w[1] || s.PassAt1 == nil || math.Abs(*s.PassAt1-w[2]) > 1e-12 ||
			s.PassAtK == nil || *s.PassAtK != w[3] || math.Abs(s.MeanScore-w[1]/3) > 1e-12 || s.K != 3 {
			t.Errorf("%s: %+v, want runs/passed/pass@1/pass@3 %v\n%s", s.TaskID, s, w, out.String())
		}
	}
	if rep.Failed() || rep.TornDown != 9 || len(rep.Runs) != 9 {
		t.Errorf("failed %v, torn down %d, runs %d\n%s", rep.Failed(), rep.TornDown, len(rep.Runs), out.String())
	}
	files, _ := os.ReadDir(outDir)
	if len(files) != 9 {
		t.Errorf("%d context files, want 9", len(files))
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Errorf("sandboxes left: %v", left)
	}
}
