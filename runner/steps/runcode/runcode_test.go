package runcode_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox/local"
	"github.com/agentenv/agentenv/runner/steps"
)

type fixture struct {
	r    *runner.Runner
	svc  *runner.Services
	arts *artifact.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	docs, err := sqlite.Open(context.Background(), filepath.Join(dir, "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docs.Close() })
	objs, err := fsobject.New(filepath.Join(dir, "o"), nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := &runner.Services{Documents: docs, Objects: objs,
		Sandboxes: map[string]runner.SandboxProvider{"local": local.New(filepath.Join(dir, "sb"), nil)}}
	arts, _ := svc.ArtifactStore()
	return &fixture{r: runner.New(&runner.Options{Steps: steps.Builtin()}), svc: svc, arts: arts}
}

func (f *fixture) file(t *testing.T, id, name, body string) registry.Ref {
	t.Helper()
	a, err := f.arts.PutFile(context.Background(), id, artifact.FileInput{Filename: name, Body: strings.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	return a.Ref()
}

func (f *fixture) universe(t *testing.T, id string, files map[string]string) {
	t.Helper()
	members := map[string]registry.Ref{}
	for name, body := range files {
		members[name] = f.file(t, id+"/"+strings.ReplaceAll(name, "/", "-"), filepath.Base(name), body)
	}
	if _, err := f.arts.PutUniverse(context.Background(), id, members, nil); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) run(t *testing.T, js string) (*runner.RunContext, error) {
	t.Helper()
	task, err := f.r.ParseTask("t", 1, []byte(js))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	rc := runner.NewRunContext(nil, f.svc)
	_, err = f.r.Run(context.Background(), task, rc, nil)
	t.Cleanup(func() { _, _ = f.r.TeardownRun(context.Background(), rc, 0) })
	return rc, err
}

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
}

func results(t *testing.T, rc *runner.RunContext) map[string]any {
	t.Helper()
	v, _ := rc.Metadata("script_results")
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// A single-file Python script and a universe whose entry imports a
// sibling run in a local sandbox; each gets {args, results} and its
// result lands in metadata.script_results, the second seeing the first's.
func TestRunCodePython(t *testing.T) {
	needPython(t)
	f := newFixture(t)
	f.file(t, "double", "whatever.py", "def run(input):\n    return {'doubled': input['args']['n'] * 2}\n")
	f.universe(t, "chain", map[string]string{
		"run.py":        "from helpers import plus_one\n\ndef main(input):\n    return plus_one(input['results']['first']['doubled'])\n",
		"helpers.py":    "def plus_one(x):\n    return x + 1\n",
		"data/big.bin":  "not staged for Python",
		"other/util.py": "X = 1\n",
	})
	rc, err := f.run(t, `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	 {"id":"first","type":"run_code","sandbox_name":"box","script_artifact_id":"double","args":{"n":21}},
	 {"id":"second","type":"run_code","sandbox_name":"box","script_artifact_id":"chain","entrypoint":"main","result_id":"sum"}]`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"first": map[string]any{"doubled": 42.0}, "sum": 43.0}
	if got := results(t, rc); !reflect.DeepEqual(got, want) {
		t.Errorf("script_results = %v, want %v", got, want)
	}
}

// The program contract: a shell script and a static Go binary read the
// input on stdin and print their result.
func TestRunCodeProgram(t *testing.T) {
	f := newFixture(t)
	f.file(t, "echo-input", "echo.sh", "#!/bin/sh\necho \"{\\\"entry\\\": \\\"$1\\\", \\\"input\\\": $(cat)}\"\n")
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(`package main

import (
	"encoding/json"
	"os"
)

func main() {
	var in struct {
		Args map[string]any `+"`json:\"args\"`"+`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"go": in.Args["who"]})
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prog")
	build := exec.Command("go", "build", "-o", bin, src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(bin)
	f.universe(t, "goprog", map[string]string{"bin/prog": string(b), "README.txt": "a Go program"})
	rc, err := f.run(t, `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	 {"id":"sh","type":"run_code","sandbox_name":"box","script_artifact_id":"echo-input","args":{"a":1},"entrypoint":"go"},
	 {"id":"go","type":"run_code","sandbox_name":"box","script_artifact_id":"goprog","script_file":"bin/prog","args":{"who":"gopher"}}]`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"sh": map[string]any{"entry": "go", "input": map[string]any{"args": map[string]any{"a": 1.0}, "results": map[string]any{}}},
		"go": map[string]any{"go": "gopher"},
	}
	if got := results(t, rc); !reflect.DeepEqual(got, want) {
		t.Errorf("script_results = %v, want %v", got, want)
	}
}

// A script that fails, prints no JSON, runs too long, or is given a target
// that runs no commands fails the step saying why; nothing is recorded.
func TestRunCodeFailures(t *testing.T) {
	needPython(t)
	f := newFixture(t)
	f.file(t, "boom", "boom.py", "def run(input):\n    raise ValueError('no way')\n")
	f.file(t, "notjson", "p.sh", "#!/bin/sh\necho hello\n")
	f.file(t, "slow", "slow.sh", "#!/bin/sh\nexec sleep 30\n")
	f.universe(t, "two", map[string]string{"a.py": "", "b.py": ""})
	for task, want := range map[string]string{
		`{"id":"x","type":"run_code","sandbox_name":"box","script_artifact_id":"boom"}`:                       "ValueError: no way",
		`{"id":"x","type":"run_code","sandbox_name":"box","script_artifact_id":"notjson"}`:                    "the result is not JSON",
		`{"id":"x","type":"run_code","sandbox_name":"box","script_artifact_id":"slow","timeout_seconds":0.2}`: "timed out after 200ms",
		`{"id":"x","type":"run_code","sandbox_name":"box","script_artifact_id":"two"}`:                        "set script_file to one of a.py, b.py",
		`{"id":"x","type":"run_code","sandbox_name":"nope","script_artifact_id":"boom"}`:                      `sandbox_name: no sandbox named "nope"`,
		`{"id":"x","type":"run_code","script_artifact_id":"boom"}`:                                            `agent_name: no agent named "default-agent"`,
	} {
		rc, err := f.run(t, `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},`+task+`]`)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", task, err, want)
		}
		if _, ok := rc.Metadata("script_results"); ok {
			t.Errorf("%s: a failed script recorded a result", task)
		}
	}
}

// An agent deployed as an instance runs no commands: the step says so and
// points at sandbox_name.
func TestRunCodeAgentWithoutExec(t *testing.T) {
	f := newFixture(t)
	f.file(t, "p", "p.sh", "#!/bin/sh\necho 1\n")
	task, err := f.r.ParseTask("t", 1, []byte(`[{"id":"x","type":"run_code","agent_name":"worker","script_artifact_id":"p"}]`))
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.NewRunContext(map[string]any{"deployed_agents": []any{map[string]any{"agent_name": "worker", "sandbox_id": "process-1"}}}, f.svc)
	rc.HoldSandbox(&runner.InstanceSandbox{SandboxID: "process-1", SandboxType: "process", Kind: "agent", InstanceID: "a1"})
	_, err = f.r.Run(context.Background(), task, rc, nil)
	if err == nil || !strings.Contains(err.Error(), "sandbox of agent worker") || !strings.Contains(err.Error(), "sandbox_name") {
		t.Errorf("err = %v", err)
	}
}

// Bad fields are refused when the task is parsed, naming step and field;
// a missing artifact is found at preflight.
func TestRunCodeBadInput(t *testing.T) {
	for js, want := range map[string]string{
		`[{"id":"c","type":"run_code"}]`:                                                          `step 1 (id "c"): field "script_artifact_id": is required`,
		`[{"id":"c","type":"run_code","script_artifact_id":5}]`:                                   `step 1 (id "c"): field "script_artifact_id": must be a string, got a number`,
		`[{"id":"c","type":"run_code","script_artifact_id":"s","args":"x"}]`:                      `step 1 (id "c"): field "args": must be an object, got a string`,
		`[{"id":"c","type":"run_code","script_artifact_id":"s","timeout_seconds":-1}]`:            `step 1 (id "c"): field "timeout_seconds": must be positive`,
		`[{"id":"c","type":"run_code","script_artifact_id":"s","env_id":"e","agent_name":"a"}]`:   `step 1 (id "c"): field "env_id": give one of env_id, agent_name and sandbox_name`,
		`[{"id":"c","type":"run_code","script_artifact_id":"s","script_file":"../x.py"}]`:         `step 1 (id "c"): field "script_file": must be a relative path`,
		`[{"id":"c","type":"run_code","script_artifact_id":"s","entrypoint":"not a name"}]`:       `step 1 (id "c"): field "entrypoint": must be a function name`,
		`[{"id":"c","type":"run_code","script_artifact_id":"s","script_artifact_version":"one"}]`: `step 1 (id "c"): field "script_artifact_version": must be`,
		`[{"id":"c","type":"run_code","script_artifact_id":"s","script":"x"}]`:                    `step 1 (id "c"): field "script"`,
	} {
		_, err := runner.ParseSteps(steps.Builtin(), []byte(js))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s", js, err, want)
		}
	}
	f := newFixture(t)
	f.universe(t, "empty-py", map[string]string{"data.txt": "x"})
	task, err := f.r.ParseTask("t", 1, []byte(`[{"id":"a","type":"run_code","sandbox_name":"b","script_artifact_id":"missing"},
	 {"id":"b","type":"run_code","sandbox_name":"b","script_artifact_id":"empty-py"}]`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range runner.Preflight(context.Background(), task, f.svc) {
		got = append(got, p.Error())
	}
	want := []string{`step 1 (id "a"): field "script_artifact_id": Artifact missing version=latest not found`,
		`step 2 (id "b"): field "script_artifact_id": script_artifact_id empty-py has no .py member; set script_file to its program (members: data.txt)`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("preflight:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
