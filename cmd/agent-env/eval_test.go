package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
)

// slotSteps is a task that deploys a local sandbox and passes while it
// can take one of slots folders under dir (mkdir is atomic, so exactly
// min(slots, k) of k concurrent runs pass); slots < 0 always passes.
func slotSteps(dir, name string, slots int) string {
	cmd := "false"
	if slots < 0 {
		cmd = "true"
	}
	for i := range slots {
		cmd = fmt.Sprintf("mkdir %s 2>/dev/null || %s", filepath.Join(dir, fmt.Sprintf("%s-%d", name, i)), cmd)
	}
	return `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm","sandbox_type":"local"},
	 {"id":"check","type":"verify_sandbox","sandbox_name":"box","verifier_id":"v",
	  "criteria":[{"type":"bash_cmd_succeeds","criterion":"got a slot","bash_cmd":"` + cmd + `"}]}]`
}

// TestEvalCommands: bad evals are refused naming the file and field, and
// nothing is stored; a good one is stored, listed, printed and run three
// times per task, with pass@1 and pass@3 as computed by hand.
func TestEvalCommands(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	for name, slots := range map[string]int{"always": -1, "twice": 2, "never": 0} {
		f := filepath.Join(dir, name+".json")
		writeFile(t, f, slotSteps(dir, name, slots))
		if code, out, errs := c.run("task", "create", f, "--id", "ev/"+name); code != 0 {
			t.Fatalf("task create %s: %d\n%s%s", name, code, out, errs)
		}
	}
	bad := map[string]string{
		`{"task_id":"ev/always"}`: "(top level): a JSON list",
		`[{"task_id":"ev/always"},{"task_id":"ev/always","version":1}]`: `[1]: task "ev/always" is listed twice (also [0])`,
		`[{"task_id":"ev/always"},{"task_id":"ev/nope"}]`:               "[1].task_id: unknown task ev/nope",
		`[{"task_id":"ev/always","version":9}]`:                         "[0].task_id: unknown task ev/always:9",
		`[{"task":"ev/always"}]`:                                        `[0]: an object with task_id and an optional version: unknown field "task"`,
	}
	for body, want := range bad {
		f := filepath.Join(dir, "bad.json")
		writeFile(t, f, body)
		code, _, errs := c.run("eval", "create", f, "--id", "smoke")
		if code != 1 || !strings.Contains(errs, f+": "+want) {
			t.Errorf("eval create %s: exit %d, %q; want %q", body, code, errs, want)
		}
	}
	if _, out, _ := c.run("eval", "list"); strings.Contains(out, "smoke") {
		t.Errorf("a refused eval was stored:\n%s", out)
	}
	f := filepath.Join(dir, "eval.json")
	writeFile(t, f, `[{"task_id":"ev/always"},{"task_id":"ev/twice","version":1},{"task_id":"ev/never"}]`)
	if code, out, errs := c.run("eval", "create", f, "--id", "smoke"); code != 0 || out != "Created eval: id=smoke version=1 tasks=3\n" {
		t.Fatalf("eval create: %d %q %s", code, out, errs)
	}
	if _, out, _ := c.run("eval", "list"); !strings.Contains(out, "smoke  1        3") {
		t.Errorf("eval list:\n%s", out)
	}
	if _, out, _ := c.run("eval", "get", "--id", "smoke"); !strings.Contains(out, `"task_id": "ev/twice",`) || !strings.Contains(out, `"task_version": 1`) {
		t.Errorf("eval get:\n%s", out)
	}
	outDir := filepath.Join(dir, "out")
	code, out, errs := c.run("eval", "run", "--id", "smoke", "--k", "3", "--max-concurrency", "2", "--output-dir", outDir)
	if code != 0 {
		t.Fatalf("eval run: exit %d\n%s\n%s", code, out, errs)
	}
	_, table, _ := strings.Cut(out, "Results:\n")
	want := `  TASK       VERSION  RUNS  PASSED  MEAN SCORE  PASS@1  PASS@3
  ev/always  1        3     3       1.000       1.000   1.000
  ev/twice   1        3     2       0.667       0.667   1.000
  ev/never   1        3     0       0.000       0.000   0.000
Tore down 9 sandboxes.
`
	if table != want {
		t.Errorf("eval run table:\n%s\nwant:\n%s\nfull output:\n%s", table, want, out)
	}
	if files, _ := os.ReadDir(outDir); len(files) != 9 {
		t.Errorf("%d context files, want 9", len(files))
	}
	if left := c.leftoverSandboxes(); len(left) != 0 {
		t.Errorf("leftover work folders: %v", left)
	}

	// --json, k=2: the twice task now passes 0 of 2 (its slots are taken).
	code, out, errs = c.run("eval", "run", "--id", "smoke", "--k", "2", "--json", "--output-dir", outDir)
	if code != 0 {
		t.Fatalf("eval run --json: exit %d\n%s\n%s", code, out, errs)
	}
	var rep struct {
		EvalID string `json:"eval_id"`
		Tasks  []struct {
			TaskID  string   `json:"task_id"`
			Runs    int      `json:"runs"`
			Passed  int      `json:"passed"`
			PassAt1 *float64 `json:"pass_at_1"`
			PassAtK *float64 `json:"pass_at_k"`
		} `json:"tasks"`
		Runs []json.RawMessage `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if rep.EvalID != "smoke" || len(rep.Runs) != 6 || len(rep.Tasks) != 3 || rep.Tasks[0].Passed != 2 || *rep.Tasks[0].PassAtK != 1 ||
		rep.Tasks[1].Passed != 0 || math.Abs(*rep.Tasks[1].PassAt1) != 0 {
		t.Errorf("--json:\n%s", out)
	}
}

// A real SIGINT to `agent-env eval run`: exit 130, every run's sandbox
// torn down and no process of theirs left.
func TestEvalSIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildCLI(t)
	c := newCLI(t)
	marker := "evalsigint" + runner.RandomHex(4)
	f := filepath.Join(t.TempDir(), "slow.json")
	writeFile(t, f, `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm","sandbox_type":"local"},
	  {"id":"wait","type":"verify_sandbox","sandbox_name":"box","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"sleep 300; : `+marker+`"}]}]`)
	if code, out, errs := c.run("task", "create", f, "--id", "slow"); code != 0 {
		t.Fatalf("task create: %d\n%s%s", code, out, errs)
	}
	ef := filepath.Join(t.TempDir(), "eval.json")
	writeFile(t, ef, `[{"task_id":"slow"}]`)
	if code, out, errs := c.run("eval", "create", ef, "--id", "slow-eval"); code != 0 {
		t.Fatalf("eval create: %d\n%s%s", code, out, errs)
	}
	// k=3 with 2 at once: two runs start, the third waits and never starts.
	ch := startCLI(t, bin, "eval", "run", "--id", "slow-eval", "--k", "3", "--max-concurrency", "2", "--output-dir", t.TempDir())
	ch.waitUntil("two slow steps running", func(out string) bool {
		return strings.Count(out, "step 2/2 wait (verify_sandbox)") >= 2 && len(markedProcesses(marker)) >= 2
	})
	if err := ch.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := ch.exitCode(); code != exitInterrupted {
		t.Errorf("exit %d, want 130\n%s", code, ch.output())
	}
	s := ch.stdout()
	if strings.Count(s, "] cancelled") != 2 || !strings.Contains(s, "slow  1        2     0") || !strings.HasSuffix(s, "Tore down 2 sandboxes.\n") {
		t.Errorf("output:\n%s", s)
	}
	if left := c.leftoverSandboxes(); len(left) != 0 {
		t.Errorf("leftover work folders: %v", left)
	}
	if ps := markedProcesses(marker); len(ps) != 0 {
		t.Errorf("processes left: %v", ps)
	}
}

// markedProcesses lists the processes whose command line holds marker.
func markedProcesses(marker string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// TestRunBundleEvals: `agent-env run DIR` runs the bundle's evals (each
// task once, a table per eval, tasks no eval names skipped); --eval NAME
// runs one; a bad eval file is refused naming the file and the field, and
// nothing of the bundle is stored.
func TestRunBundleEvals(t *testing.T) {
	c := newCLI(t)
	slots := t.TempDir()
	dir := filepath.Join(t.TempDir(), "evb")
	writeFile(t, filepath.Join(dir, "tasks", "pass.json"), slotSteps(slots, "pass", -1))
	writeFile(t, filepath.Join(dir, "tasks", "fail.json"), slotSteps(slots, "fail", 0))
	writeFile(t, filepath.Join(dir, "tasks", "extra.json"), slotSteps(slots, "extra", -1))
	writeFile(t, filepath.Join(dir, "evals", "smoke.toml"), "tasks = [\"pass\", {task = \"fail\", version = 1}]\n")
	writeFile(t, filepath.Join(dir, "evals", "quick.toml"), "tasks = [\"pass\"]\n")

	for body, want := range map[string]string{
		"tasks = [\"pass\", {task = \"pass\"}]\n":  `evals/bad.toml: tasks[1]: task "pass" is listed twice (also tasks[0])`,
		"tasks = [\"nope\"]\n":                     `evals/bad.toml: tasks[0]: unknown task "nope": not in the bundle's tasks/ (have: extra, fail, pass)`,
		"tasks = \"pass\"\n":                       `evals/bad.toml: (top level):`,
		"tasks = [{task = \"pass\", versoin = 1}]": `evals/bad.toml: tasks[0].versoin: unknown key (known: task, version)`,
		"tasks = [\"other/store-task\"]\n":         `evals/bad.toml: tasks[0]: unknown task other/store-task: not in the bundle's tasks/ nor in the store`,
	} {
		writeFile(t, filepath.Join(dir, "evals", "bad.toml"), body)
		code, out, errs := c.run("run", dir)
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("%q: exit %d, %q; want %q\n%s", body, code, errs, want, out)
		}
		if _, list, _ := c.run("task", "list", "--local"); strings.Contains(list, "evb") {
			t.Fatalf("a refused bundle stored tasks:\n%s", list)
		}
	}
	_ = os.Remove(filepath.Join(dir, "evals", "bad.toml"))

	code, out, errs := c.run("run", dir)
	for _, want := range []string{
		"evals/quick.toml: v1 (new)", "evals/smoke.toml: v1 (new)",
		"\nevals/quick.toml v1:\nResults:\n", "\nevals/smoke.toml v1:\nResults:\n",
		"  TASK             VERSION  RUNS  PASSED  MEAN SCORE  PASS@1\n",
		"  tasks/pass.json  1        1     1       1.000       1.000\n",
		"  tasks/fail.json  1        1     0       0.000       0.000\n",
		"[tasks/fail.json run 1/1] not passed, score 0,",
		"  tasks/extra.json: skipped\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run: missing %q in:\n%s\n%s", want, out, errs)
		}
	}
	if code != 0 {
		t.Errorf("run: exit %d (a run that scores 0 is a result, not a failure)\n%s", code, errs)
	}
	code, out, errs = c.run("run", dir, "--eval", "quick")
	if code != 0 || strings.Contains(out, "smoke.toml v1:") || !strings.Contains(out, "evals/quick.toml v1:\nResults:") ||
		!strings.Contains(out, "evals/quick.toml: v1, unchanged") {
		t.Errorf("--eval quick: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = c.run("run", dir, "--dry-run")
	if code != 0 || !strings.Contains(out, "  evals/smoke.toml -> @local/") || !strings.Contains(out, "Would run:\n  evals/quick.toml (1 tasks)\n  evals/smoke.toml (2 tasks)\n") {
		t.Errorf("--dry-run: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = c.run("run", dir, "--eval", "smoke", "--json")
	var rep struct {
		Evals []struct {
			EvalID string `json:"eval_id"`
			Tasks  []struct {
				Name   string `json:"name"`
				Passed int    `json:"passed"`
			} `json:"tasks"`
		} `json:"evals"`
		Skipped []string `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || len(rep.Evals) != 1 || !strings.HasSuffix(rep.Evals[0].EvalID, "/evb/smoke") ||
		len(rep.Evals[0].Tasks) != 2 || rep.Evals[0].Tasks[0].Name != "tasks/pass.json" || rep.Evals[0].Tasks[0].Passed != 1 || len(rep.Skipped) != 1 {
		t.Errorf("--json: exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	for _, args := range [][]string{{"run", dir, "--eval", "nope"}, {"run", dir, "--eval", "nope", "--dry-run"}} {
		if code, _, errs := c.run(args...); code != 1 || !strings.Contains(errs, "--eval nope: no such eval in the bundle (have: quick, smoke)") {
			t.Errorf("%v: %d %s", args, code, errs)
		}
	}
	if code, out, _ := c.run("run", dir, "--task", "extra"); code != 0 || !strings.Contains(out, "tasks/extra.json v1: passed") {
		t.Errorf("--task extra: %d\n%s", code, out)
	}
	if left := c.leftoverSandboxes(); len(left) != 0 {
		t.Errorf("leftover work folders: %v", left)
	}
}
