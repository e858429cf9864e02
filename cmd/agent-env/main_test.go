package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundles"
	"github.com/agentenv/agentenv/runner/sandbox/local"
	"github.com/agentenv/agentenv/runner/steps"
)

// syncBuffer is a goroutine-safe buffer that signals each write.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{wrote: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor blocks until the output contains sub (30 s at most).
func (s *syncBuffer) waitFor(t *testing.T, sub string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(s.String(), sub) {
		select {
		case <-s.wrote:
		case <-deadline:
			t.Fatalf("output never contained %q:\n%s", sub, s.String())
		}
	}
}

type cli struct {
	t          *testing.T
	stateRoot  string
	sandboxDir string
	home       string
}

// newCLI gives the test its own home, state root and sandbox folder.
func newCLI(t *testing.T) *cli {
	dir := t.TempDir()
	c := &cli{t: t, stateRoot: filepath.Join(dir, "state"), sandboxDir: filepath.Join(dir, "sandboxes"), home: filepath.Join(dir, "home")}
	_ = os.MkdirAll(c.home, 0o700)
	t.Setenv("HOME", c.home)
	t.Setenv("XDG_STATE_HOME", c.stateRoot)
	t.Setenv("AGENT_ENV_LOCAL_SANDBOX_DIR", c.sandboxDir)
	t.Setenv("AGENT_ENV_CONFIG", "")
	return c
}

func (c *cli) deps(stdout, stderr *syncBuffer) *deps {
	return &deps{stdout: stdout, stderr: stderr, bundles: bundles.FS(), sandboxRoot: local.DefaultRoot,
		openStoresFor: openConfiguredStores, getenv: os.Getenv}
}

// run executes the CLI with a fresh command tree.
func (c *cli) run(args ...string) (code int, stdout, stderr string) {
	c.t.Helper()
	out, errb := newSyncBuffer(), newSyncBuffer()
	code = execute(context.Background(), args, c.deps(out, errb))
	return code, out.String(), errb.String()
}

func (c *cli) instance(id string) *runner.Instance {
	c.t.Helper()
	docs, err := sqlite.Open(context.Background(), filepath.Join(c.stateRoot, "agent-env", "document_store", "documents.db"), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	defer docs.Close()
	inst, err := runner.GetInstance(context.Background(), docs, id)
	if err != nil {
		c.t.Fatal(err)
	}
	return inst
}

func (c *cli) leftoverSandboxes() []string {
	entries, _ := os.ReadDir(c.sandboxDir)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

var (
	secs       = regexp.MustCompile(`\d+\.\ds`)
	instanceRe = regexp.MustCompile(`instance (@local/agentenv-framework/hello/hello-[a-z0-9]{8})\n`)
)

func TestRunHello(t *testing.T) {
	c := newCLI(t)
	code, out, stderr := c.run("run", "hello")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	m := instanceRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no instance line in:\n%s", out)
	}
	got := strings.Replace(secs.ReplaceAllString(out, "Xs"), m[1], "ID", 1)
	got = strings.NewReplacer(c.stateRoot, "STATE", c.sandboxDir, "SANDBOXES").Replace(got)
	want := `First run: stored tasks, artifacts and run records live in STATE/agent-env;
  task sandboxes (work folders) in SANDBOXES. agent-env config show lists every setting.
artifacts/greeting: v1 (new)
tasks/hello.json: v1 (new)
[tasks/hello.json] step 1/3 box (deploy_sandbox)
[tasks/hello.json] step 1/3 box done in Xs
[tasks/hello.json] step 2/3 load (load_artifact)
[tasks/hello.json] step 2/3 load done in Xs
[tasks/hello.json] step 3/3 hello (verify_sandbox)
[tasks/hello.json] step 3/3 hello done in Xs
[tasks/hello.json] passed in Xs

Tasks:
  tasks/hello.json v1: passed (hello: 1), Xs, instance ID
Tore down 1 sandbox.
`
	if got != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", got, want)
	}
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	// Only the first run says where the state lives.
	if _, again, _ := c.run("run", "hello"); strings.Contains(again, "First run") {
		t.Errorf("second run:\n%s", again)
	}
	inst := c.instance(m[1])
	if inst.Status != runner.StatusCompleted || len(inst.CompletedSteps) != 3 || inst.TaskID != "@local/agentenv-framework/hello/hello" || inst.TaskVersion != 1 {
		t.Errorf("instance: %+v", inst)
	}
	for _, s := range inst.CompletedSteps {
		if s.Status != "success" {
			t.Errorf("step %s: %s", s.StepID, s.Status)
		}
	}
	v := inst.Context["metadata"].(map[string]any)["verifications"].(map[string]any)["hello"].(map[string]any)
	if v["score"] != 1.0 || len(v["results"].([]any)) != 2 {
		t.Errorf("verification: %v", v)
	}
	if left := c.leftoverSandboxes(); len(left) != 0 {
		t.Errorf("leftover work folders: %v", left)
	}

	code, out, _ = c.run("run", "hello")
	if code != 0 || !strings.HasPrefix(out, "artifacts/greeting: v1, unchanged\ntasks/hello.json: v1, unchanged\n") {
		t.Errorf("second run: exit %d\n%s", code, out)
	}

	code, out, _ = c.run("task", "get-instance", "--id", m[1])
	if code != 0 || !strings.Contains(out, "Status: completed\nProgress 3/3\n") {
		t.Errorf("get-instance: exit %d\n%s", code, out)
	}
}

func TestRunListsBundles(t *testing.T) {
	c := newCLI(t)
	code, out, _ := c.run("run")
	exported := filepath.Join(c.stateRoot, "agent-env", "bundles", "agentenv-framework", "hello")
	if _, err := os.Stat(filepath.Join(exported, "tasks", "hello.json")); err != nil || !strings.Contains(out, exported) {
		t.Errorf("listing does not name an exported folder %s: %v\n%s", exported, err, out)
	}
	if code != 0 || !strings.Contains(out, "NAME") || !strings.Contains(out, "hello") ||
		!strings.Contains(out, "agentenv-framework") || !strings.HasSuffix(out, "Run one with agent-env run NAME. To change one, copy its folder and run the copy.\n") {
		t.Errorf("exit %d\n%s", code, out)
	}
	code, out, _ = c.run("run", "hello", "--dry-run")
	if code != 0 || !strings.Contains(out, "Store refs:\n") || !strings.Contains(out, "Would run:\n  tasks/hello.json (3 steps)") {
		t.Errorf("dry run: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(c.stateRoot, "agent-env", "object_store", "artifacts")); err == nil {
		t.Error("--dry-run wrote objects")
	}
	// The exported folder runs as a folder bundle, under its own id root.
	code, out, _ = c.run("run", exported)
	if code != 0 || !strings.Contains(out, "passed (hello: 1)") || strings.Contains(out, "instance @local/agentenv-framework/") {
		t.Errorf("running the exported folder: exit %d\n%s", code, out)
	}
}

func TestRootHelp(t *testing.T) {
	c := newCLI(t)
	code, out, _ := c.run("--help")
	for _, w := range []string{"run", "task", "config", "registry"} {
		if !strings.Contains(out, "  "+w+" ") {
			t.Errorf("help lacks %q:\n%s", w, out)
		}
	}
	if code != 0 {
		t.Errorf("exit %d", code)
	}
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTaskCreateRun(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "t.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"v","type":"verify_sandbox","sandbox_name":"box","verifier_id":"ok",
	   "criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"echo hi > /app/x && grep -q hi x"}]}]`)
	code, out, stderr := c.run("task", "create", f, "--id", "demo")
	want := "Reading steps from " + f + "...\n  Step 1/2: deploy_sandbox id=box version=1\n  Step 2/2: verify_sandbox id=v version=1\n" +
		"Creating task 'demo' with 2 steps...\nCreated task: id=demo version=1 steps=2\n"
	if code != 0 || out != want {
		t.Fatalf("create: exit %d\n%s\nwant\n%s\nstderr %s", code, out, want, stderr)
	}
	code, out, _ = c.run("task", "list")
	if code != 0 || !regexp.MustCompile(`demo\s+1\s+2`).MatchString(out) {
		t.Errorf("list: %d\n%s", code, out)
	}
	code, out, _ = c.run("task", "get", "--id", "demo")
	if code != 0 || !strings.Contains(out, `"type": "deploy_sandbox"`) {
		t.Errorf("get: %d\n%s", code, out)
	}
	outDir := filepath.Join(dir, "out")
	code, out, stderr = c.run("task", "run", "--id", "demo", "--output-dir", outDir, "--litellm-api-key", "sk-test-secret")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, w := range []string{"Fetching task: id=demo version=latest...\n", "Found task: id=demo version=1 steps=2\n",
		"Running step [1/2]: deploy_sandbox (id=box)...\n", "Completed step [2/2]: verify_sandbox (id=v) [",
		"verification (verifier_id=ok)\n", "score (verifier_id=ok): 1\n", "Task completed!\n", "Task context written to: " + outDir + "/demo_"} {
		if !strings.Contains(out, w) {
			t.Errorf("run output lacks %q:\n%s", w, out)
		}
	}
	files, _ := filepath.Glob(filepath.Join(outDir, "demo_*.json"))
	if len(files) != 1 {
		t.Fatalf("context files: %v", files)
	}
	b, _ := os.ReadFile(files[0])
	if bytes.Contains(b, []byte("sk-test-secret")) || !bytes.Contains(b, []byte(`"verifications"`)) {
		t.Errorf("context file:\n%s", b)
	}
	id := regexp.MustCompile(`Task instance: (demo-[a-z0-9]{8})`).FindStringSubmatch(out)
	if id == nil {
		t.Fatal("no instance line")
	}
	if inst := c.instance(id[1]); inst.Status != runner.StatusCompleted {
		t.Errorf("instance status %s", inst.Status)
	}
	// task run never tears down.
	if left := c.leftoverSandboxes(); len(left) != 1 {
		t.Errorf("work folders after task run: %v", left)
	}

	code, out, _ = c.run("task", "run", "--id", "demo", "--output-dir", outDir, "--k", "2")
	if code != 0 || !strings.Contains(out, "[run 1] Task completed!") || !strings.Contains(out, "[run 2] Task completed!") {
		t.Errorf("--k 2: exit %d\n%s", code, out)
	}
}

func TestBadInput(t *testing.T) {
	c := newCLI(t)
	knownTypes := strings.Join(steps.Builtin().Types(), ", ")
	dir := t.TempDir()
	cases := []struct {
		name, json, want string
	}{
		{"malformed", `[{"id":"a","type":"deploy_sandbox"`, "Error: task: JSON syntax error at line 1, column 35: the JSON ends early\n"},
		{"unknown type", `[{"id":"a","type":"launch"}]`, "Error: step 1 (id \"a\"): field \"type\": Unknown task step type \"launch\"\n" +
			"unknown step types: launch; a plugin may provide them (agent-env plugin list shows the installed step types) (known: " + knownTypes + ")\n"},
		{"forward", `[{"id":"a","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"vm","depends_on":[{"task_step_id":"z"}]},{"id":"z","type":"deploy_sandbox","sandbox_name":"c","sandbox_mode":"vm"}]`,
			"Error: step 1 (id \"a\"): field \"depends_on[0]\": depends on a later step \"z\" (step 2); only earlier steps may be named\n"},
		{"missing dep", `[{"id":"a","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"vm","depends_on":[{"task_step_id":"nope"}]}]`,
			"Error: step 1 (id \"a\"): field \"depends_on[0]\": depends on an unknown step \"nope\"\n"},
		{"self dep", `[{"id":"a","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"vm","depends_on":["a"]}]`,
			"Error: step 1 (id \"a\"): field \"depends_on[0]\": depends on itself: a step cannot wait for itself\n"},
		{"go type", `[{"id":"a","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"vm","depends_on":[true]}]`,
			"Error: step 1 (id \"a\"): field \"depends_on[0]\": must be a step id (\"deploy\") or {\"task_step_id\": \"deploy\"}, got a boolean\n"},
		{"every problem", `[{"id":"a","type":"deploy_sandbox","sandbox_mode":"vm","cpu":"two"},
		  {"id":"b","type":"launch","depends_on":["a"]},{"id":"c","type":"orbit"}]`,
			"Error: 4 problems in the task:\n" +
				"  step 1 (id \"a\"): field \"cpu\": must be a number, got a string\n" +
				"  step 1 (id \"a\"): field \"sandbox_name\": is required\n" +
				"  step 2 (id \"b\"): field \"type\": Unknown task step type \"launch\"\n" +
				"  step 3 (id \"c\"): field \"type\": Unknown task step type \"orbit\"\n" +
				"  unknown step types: launch, orbit; a plugin may provide them (agent-env plugin list shows the installed step types) (known: " + knownTypes + ")\n"},
		{"missing field", `[{"id":"a","type":"deploy_sandbox","sandbox_mode":"vm"}]`, "Error: step 1 (id \"a\"): field \"sandbox_name\": is required\n"},
		{"typo", `[{"id":"a","type":"deploy_sandbx"}]`, "Error: step 1 (id \"a\"): field \"type\": Unknown task step type \"deploy_sandbx\"; did you mean \"deploy_sandbox\"?\n" +
			"unknown step types: deploy_sandbx; a plugin may provide them (agent-env plugin list shows the installed step types) (known: " + knownTypes + ")\n"},
	}
	for _, tc := range cases {
		f := writeFile(t, filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json"), tc.json)
		code, _, stderr := c.run("task", "create", f, "--id", "bad")
		if code != 1 || stderr != tc.want {
			t.Errorf("%s: exit %d, stderr %q, want %q", tc.name, code, stderr, tc.want)
		}
	}
	_, out, _ := c.run("task", "list")
	if strings.Contains(out, "bad") {
		t.Errorf("a refused task was stored:\n%s", out)
	}
	// Preflight: the artifact does not exist; nothing is saved.
	f := writeFile(t, filepath.Join(dir, "pre.json"), `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"l","type":"load_artifact","sandbox_name":"box","artifact_id":"missing-art"}]`)
	code, out, _ := c.run("task", "create", f, "--id", "pre")
	if code != 1 || !strings.Contains(out, "Preflight found 1 problem(s):\n  - step 2 (id \"l\"): field \"artifact_id\": Artifact missing-art version=latest not found\n") ||
		!strings.Contains(out, "Nothing was saved. Re-run with --skip-validation to save anyway.") {
		t.Errorf("preflight: exit %d\n%s", code, out)
	}
	if code, _, _ := c.run("task", "get", "--id", "pre"); code != 1 {
		t.Error("a task refused by preflight was saved")
	}

	// An unknown sandbox name fails the run naming the step and the field.
	f = writeFile(t, filepath.Join(dir, "nobox.json"), `[{"id":"v","type":"verify_sandbox","sandbox_name":"ghost","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"true"}]}]`)
	if code, out, stderr := c.run("task", "create", f, "--id", "nobox"); code != 0 {
		t.Fatalf("create nobox: %d %s %s", code, out, stderr)
	}
	code, _, stderr := c.run("task", "run", "--id", "nobox", "--output-dir", filepath.Join(dir, "o"))
	if code != 1 || stderr != "Error: step \"v\" (verify_sandbox) failed: sandbox_name: no sandbox named \"ghost\" in the run context (none deployed yet)\n" {
		t.Errorf("unknown sandbox: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = c.run("run", "no-such-bundle")
	if code != 1 || !strings.HasPrefix(stderr, "Error: bundle not found: no installed bundle \"no-such-bundle\"") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("unknown bundle: exit %d, stderr %q", code, stderr)
	}
}

func TestCtrlCCancelsAndTearsDown(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(t.TempDir(), "slow")
	writeFile(t, filepath.Join(dir, "tasks", "slow.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"wait","type":"verify_sandbox","sandbox_name":"box","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"sleep 300"}]}]`)
	out, errb := newSyncBuffer(), newSyncBuffer()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan int, 1)
	go func() { done <- execute(ctx, []string{"run", dir}, c.deps(out, errb)) }()
	out.waitFor(t, "step 2/2 wait (verify_sandbox)")
	cancel(interruptFor(os.Interrupt))
	code := <-done
	if code != exitInterrupted {
		t.Errorf("exit %d, want 130\n%s\n%s", code, out, errb)
	}
	s := out.String()
	if !strings.Contains(s, "tasks/slow.json v1: cancelled") || !strings.Contains(s, "Tore down 1 sandbox.") {
		t.Errorf("output:\n%s", s)
	}
	if left := c.leftoverSandboxes(); len(left) != 0 {
		t.Errorf("leftover work folders: %v", left)
	}
	id := regexp.MustCompile(`instance (\S+-[a-z0-9]{8})\n`).FindStringSubmatch(s)
	if id == nil {
		t.Fatal("no instance id")
	}
	inst := c.instance(id[1])
	if inst.Status != runner.StatusCancelled || inst.Error == nil || *inst.Error != "cancelled by Ctrl-C" {
		t.Errorf("instance %s %v", inst.Status, inst.Error)
	}
}

func TestRunKeepWaitsForCtrlC(t *testing.T) {
	c := newCLI(t)
	out, errb := newSyncBuffer(), newSyncBuffer()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan int, 1)
	go func() { done <- execute(ctx, []string{"run", "hello", "--keep"}, c.deps(out, errb)) }()
	out.waitFor(t, "Press Ctrl-C to tear down.\n")
	if left := c.leftoverSandboxes(); len(left) != 1 {
		t.Errorf("--keep: work folders %v, want the kept one", left)
	}
	s := out.String()
	if strings.Contains(s, "Tore down") || !strings.Contains(s, "Kept:\n  sandbox box: local-") {
		t.Errorf("before Ctrl-C:\n%s", s)
	}
	cancel(interruptFor(os.Interrupt))
	if code := <-done; code != 0 {
		t.Errorf("exit %d after a kept, passed run\n%s", code, errb)
	}
	if !strings.HasSuffix(out.String(), "Tore down 1 sandbox.\n") {
		t.Errorf("after Ctrl-C:\n%s", out)
	}
	if left := c.leftoverSandboxes(); len(left) != 0 {
		t.Errorf("leftover work folders: %v", left)
	}
}

func TestTaskRunSIGTERM(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "slow.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"wait","type":"verify_sandbox","sandbox_name":"box","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"sleep 300"}]}]`)
	if code, out, stderr := c.run("task", "create", f, "--id", "slow"); code != 0 {
		t.Fatalf("create: %s %s", out, stderr)
	}
	out, errb := newSyncBuffer(), newSyncBuffer()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"task", "run", "--id", "slow", "--output-dir", filepath.Join(dir, "o")}, c.deps(out, errb))
	}()
	out.waitFor(t, "Running step [2/2]: verify_sandbox (id=wait)...")
	cancel(interruptFor(syscall.SIGTERM))
	if code := <-done; code != exitTerminated {
		t.Errorf("exit %d, want 143\n%s\n%s", code, out, errb)
	}
	id := regexp.MustCompile(`Task instance: (slow-[a-z0-9]{8})`).FindStringSubmatch(out.String())
	if id == nil {
		t.Fatalf("no instance line:\n%s", out)
	}
	inst := c.instance(id[1])
	if inst.Status != runner.StatusCancelled || inst.Error == nil || *inst.Error != "cancelled by SIGTERM" {
		t.Errorf("instance %s %v", inst.Status, inst.Error)
	}
}

func TestConfig(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	cfgPath := writeFile(t, filepath.Join(dir, "config.toml"), "[sandbx]\ndefault = \"local\"\n\n[model]\napi_key = \"sk-very-secret\"\nbase_url = \"http://127.0.0.1:4000\"\n")
	t.Setenv("AGENT_ENV_CONFIG", cfgPath)
	code, out, stderr := c.run("config", "show")
	if code != 0 || !strings.Contains(out, "# config file: "+cfgPath) || !strings.Contains(out, "did you mean [sandbox]?") ||
		strings.Contains(out, "sk-very-secret") || !strings.Contains(out, "base_url") {
		t.Errorf("config show: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ = c.run("config", "explain", "model.base_url")
	if code != 0 || out != "model.base_url = \"http://127.0.0.1:4000\"  # file\n" {
		t.Errorf("explain: exit %d %q", code, out)
	}
	code, out, _ = c.run("config", "show", "--json")
	if code != 0 || !strings.Contains(out, `"file": "`+cfgPath+`"`) {
		t.Errorf("show --json: %d\n%s", code, out)
	}
	// A configured file that does not exist fails every command.
	t.Setenv("AGENT_ENV_CONFIG", filepath.Join(dir, "missing.toml"))
	for _, args := range [][]string{{"config", "show"}, {"run", "hello"}, {"task", "list"}} {
		code, _, stderr := c.run(args...)
		if code != 1 || !strings.HasPrefix(stderr, "Error: config ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v with a missing AGENT_ENV_CONFIG: exit %d %q", args, code, stderr)
		}
	}
	// An unreachable configured store is one error line naming it.
	t.Setenv("AGENT_ENV_CONFIG", writeFile(t, filepath.Join(dir, "pg.toml"), "[stores.document]\nimpl = \"postgres\"\nconfig = { dsn = \"postgres://u@127.0.0.1:1/x?connect_timeout=5\" }\n"))
	code, _, stderr = c.run("task", "list")
	if code != 1 || !strings.HasPrefix(stderr, "Error: stores.document (postgres): ") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("unreachable postgres store: exit %d %q", code, stderr)
	}
}

func TestTaskRunBatch(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "t.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"v","type":"verify_sandbox","sandbox_name":"box","verifier_id":"v",
	   "criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"test <want> = yes"}]}]`)
	if code, out, stderr := c.run("task", "create", f, "--id", "seeded"); code != 0 {
		t.Fatalf("%s %s", out, stderr)
	}
	seeds := writeFile(t, filepath.Join(dir, "seeds.csv"), "id,want\nu1,yes\n,\nu2,no\n")
	outDir := filepath.Join(dir, "out")
	code, out, _ := c.run("task", "run-batch", "--id", "seeded", "--seeds", seeds, "--output-dir", outDir, "--concurrency", "2")
	// Both runs complete (a low score is not a failure): exit 0.
	if code != 0 || !strings.Contains(out, "[seed 1] score (verifier_id=v): 1\n") || !strings.Contains(out, "[seed 2] score (verifier_id=v): 0\n") ||
		strings.Count(out, "Task completed!") != 2 {
		t.Errorf("exit %d\n%s", code, out)
	}
	files, _ := filepath.Glob(filepath.Join(outDir, "seeded-seed*_*.json"))
	if len(files) != 2 {
		t.Fatalf("files %v", files)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if !bytes.Contains(b, []byte(`"universe_id": "u`)) {
			t.Errorf("%s lacks universe_id", f)
		}
	}
	code, _, stderr := c.run("task", "run-batch", "--id", "seeded", "--seeds", writeFile(t, filepath.Join(dir, "bad.csv"), "a,b\n1\n"))
	if code != 1 || !strings.Contains(stderr, "wrong number of fields") {
		t.Errorf("ragged CSV: %d %q", code, stderr)
	}
}

// Resume: a saved context and --start-step skip the earlier steps; the
// sandbox deployed by the first run is reconnected from its handle.
func TestTaskRunResume(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "t.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"v","type":"verify_sandbox","sandbox_name":"box","verifier_id":"v",
	   "criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"test -f /app/mark || (touch /app/mark; exit 1)"}]}]`)
	if code, out, stderr := c.run("task", "create", f, "--id", "resume"); code != 0 {
		t.Fatalf("%s %s", out, stderr)
	}
	first := filepath.Join(dir, "first")
	code, out, _ := c.run("task", "run", "--id", "resume", "--output-dir", first)
	if code != 0 || !strings.Contains(out, "score (verifier_id=v): 0\n") {
		t.Fatalf("first run: %d\n%s", code, out)
	}
	files, _ := filepath.Glob(filepath.Join(first, "resume_*.json"))
	if len(files) != 1 {
		t.Fatalf("context files %v", files)
	}
	code, out, stderr := c.run("task", "run", "--id", "resume", "--output-dir", filepath.Join(dir, "second"),
		"--start-step", "1", "--context-json", files[0])
	if code != 0 || strings.Contains(out, "Running step [1/2]") || !strings.Contains(out, "score (verifier_id=v): 1\n") {
		t.Errorf("resumed run: exit %d\n%s\n%s", code, out, stderr)
	}
	ids := regexp.MustCompile(`Task instance: (resume-[a-z0-9]{8})`).FindAllStringSubmatch(out, -1)
	if len(ids) != 1 || strings.Contains(string(mustRead(t, files[0])), ids[0][1]) {
		t.Errorf("the resumed run must mint a new instance id: %v", ids)
	}
	if left := c.leftoverSandboxes(); len(left) != 1 {
		t.Errorf("work folders %v, want the one sandbox both runs used", left)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRunFlags(t *testing.T) {
	c := newCLI(t)
	code, out, stderr := c.run("run", "hello", "--sandbox", "nope")
	if code != 1 || !strings.Contains(out, "[tasks/hello.json] step 1/3 box failed in ") || !strings.Contains(out, `unknown sandbox provider "nope"`) ||
		!strings.Contains(out, "tasks/hello.json v1: failed,") || !strings.Contains(out, "Tore down 0 sandboxes.") || stderr != "" {
		t.Errorf("--sandbox nope: exit %d\n%s\n%s", code, out, stderr)
	}
	code, _, stderr = c.run("run", "hello", "--task", "nope")
	if code != 1 || stderr != "Error: --task nope: no such task in the bundle (have: hello)\n" {
		t.Errorf("--task nope: exit %d %q", code, stderr)
	}
	code, _, stderr = c.run("run", "hello", "--eval", "x")
	if code != 1 || stderr != "Error: --eval x: the bundle has no evals/<name>.toml\n" {
		t.Errorf("--eval: exit %d %q", code, stderr)
	}
	code, out, _ = c.run("run", "hello", "--task", "hello", "--model", "m1")
	if code != 0 || !strings.Contains(out, "passed (hello: 1)") {
		t.Errorf("--task hello: exit %d\n%s", code, out)
	}
}

func TestRegistryServe(t *testing.T) {
	c := newCLI(t)
	out, errb := newSyncBuffer(), newSyncBuffer()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"registry", "serve", "--addr", "127.0.0.1:0", "--dir", t.TempDir()}, c.deps(out, errb))
	}()
	out.waitFor(t, "Press Ctrl-C to stop.")
	m := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no address in %q", out)
	}
	resp, err := http.Get("http://" + m[1] + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v2/: %d", resp.StatusCode)
	}
	cancel(interruptFor(os.Interrupt))
	if code := <-done; code != 0 || !strings.HasSuffix(out.String(), "Registry stopped.\n") {
		t.Errorf("exit %d\n%s\n%s", code, out, errb)
	}
}
