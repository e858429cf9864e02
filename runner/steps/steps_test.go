package steps_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/internal/fakesandbox"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/local"
	"github.com/agentenv/agentenv/runner/steps"
)

type fixture struct {
	r    *runner.Runner
	svc  *runner.Services
	root string
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
	root := filepath.Join(dir, "sb")
	return &fixture{
		r: runner.New(&runner.Options{Steps: steps.Builtin()}),
		svc: &runner.Services{Documents: docs, Objects: objs, Sandboxes: map[string]runner.SandboxProvider{
			"local": local.New(root, nil), "flaky": fakesandbox.New("flaky", root, 1)}},
		root: root,
	}
}

// run parses and runs a task; the sandboxes are torn down at cleanup.
func (f *fixture) run(t *testing.T, js string, initial map[string]any) (*runner.RunContext, *runner.Result, error) {
	t.Helper()
	task, err := f.r.ParseTask("t", 1, []byte(js))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	rc := runner.NewRunContext(initial, f.svc)
	res, err := f.r.Run(context.Background(), task, rc, nil)
	t.Cleanup(func() { _, _ = f.r.TeardownRun(context.Background(), rc, 0) })
	return rc, res, err
}

func (f *fixture) putFile(t *testing.T, id, name, content string) {
	t.Helper()
	arts, err := f.svc.ArtifactStore()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := arts.PutFile(context.Background(), id, artifact.FileInput{Filename: name, Body: strings.NewReader(content)}); err != nil {
		t.Fatal(err)
	}
}

func TestVerifySandboxCriteria(t *testing.T) {
	f := newFixture(t)
	f.putFile(t, "notes", "notes.txt", "alpha\nbeta\n")
	rc, _, err := f.run(t, `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"load","type":"load_artifact","sandbox_name":"box","artifact_id":"notes","destination_path":"/app/in"},
	  {"id":"v","type":"verify_sandbox","sandbox_name":"box","base_dir":"/app/in","verifier_id":"v","shell_timeout_seconds":3,
	   "criteria":[
	     {"type":"probe_file_exists","paths":["notes.txt"]},
	     {"type":"probe_file_exists","paths":["notes.txt","missing.txt"]},
	     {"type":"probe_dir_exists","paths":["/app/in"]},
	     {"type":"probe_dir_exists","paths":["notes.txt"]},
	     {"type":"probe_file_contains","paths":["notes.txt"],"expected":"^al+pha\\nbeta"},
	     {"type":"probe_file_contains","paths":["notes.txt"],"value":"gamma"},
	     {"type":"bash_cmd_succeeds","bash_cmd":"test \"$(pwd)\" = \"$(cd /app/in && pwd)\" && grep -q alpha notes.txt"},
	     {"type":"bash_cmd_succeeds","bash_cmd":"echo boom >&2; exit 3"},
	     {"type":"bash_cmd_succeeds","bash_cmd":"sleep 30"},
	     {"type":"llm_judge","criterion":"not ours"}]}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rc.Verification("v")
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, false, true, false, true, false, true, false, false, false}
	for i, r := range v.Results {
		if r.Passed() != want[i] {
			t.Errorf("criterion %d (%v): result %v, want %v (%v)", i, r["type"], r.Passed(), want[i], r["justification"])
		}
	}
	if !v.Results[9].Skipped() || v.Results[8]["justification"] != "timed out after 3s" || v.Results[7]["justification"] != "exit 3: boom" {
		t.Errorf("rows: %v / %v / %v", v.Results[9], v.Results[8], v.Results[7])
	}
	if v.Score != 0 {
		t.Errorf("all_pass score %g", v.Score)
	}
	if md, _ := rc.Metadata("loaded_file_artifact_universes"); md == nil {
		t.Error("load not recorded")
	}
}

func TestPromptVerifierAndAggregate(t *testing.T) {
	f := newFixture(t)
	initial := map[string]any{"prompt_responses": []any{
		map[string]any{"prompt_id": "p", "response": "Added README\nitem 42"},
		map[string]any{"prompt_id": "bad", "response": "", "error_type": "Timeout", "error_message": "agent timed out"},
	}}
	rc, _, err := f.run(t, `[
	  {"id":"contains","type":"agent_prompt_response_verifier","prompt_id":"p","verifier_id":"a",
	   "criteria":[{"type":"response_contains","needles":["README","42"]},{"type":"response_contains","needles":["nope"]}],
	   "score_aggregator":"any_pass"},
	  {"id":"regex","type":"agent_prompt_response_verifier","prompt_id":"p","verifier_id":"b",
	   "criteria":[{"type":"response_regex_present","pattern":"readme.item","flags":["IGNORECASE","DOTALL"]},
	               {"type":"response_regex_present","pattern":"^item","flags":["MULTILINE"]},
	               {"type":"response_regex_present","pattern":"README.item","flags":[]}]},
	  {"id":"err","type":"agent_prompt_response_verifier","prompt_id":"bad","verifier_id":"c",
	   "criteria":[{"type":"response_contains","needles":["x"]}]},
	  {"id":"agg","type":"aggregate_verifiers","verifier_ids":["a","b"],"verifier_id":"total"},
	  {"id":"agg2","type":"aggregate_verifiers","verifier_ids":["total","c"],"verifier_id":"all","score_aggregator":"all_pass"}]`, initial)
	if err != nil {
		t.Fatal(err)
	}
	get := func(id string) runner.Verification {
		v, err := rc.Verification(id)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := get("a"); v.Score != 1 || !v.Results[0].Passed() || v.Results[1].Passed() {
		t.Errorf("a: %+v", v)
	}
	if v := get("b"); v.Score != 0 || !v.Results[0].Passed() || !v.Results[1].Passed() || v.Results[2].Passed() {
		t.Errorf("b: %+v", v)
	}
	if v := get("c"); v.Score != 0 || len(v.Results) != 1 || v.Results[0]["id"] != "prompt_error" || v.Results[0]["message"] != "agent timed out" {
		t.Errorf("c: %+v", v)
	}
	// 5 rows: a has 1 pass of 2, b 2 of 3 -> weighted average 3/5.
	if v := get("total"); v.Score != 0.6 || v.Results != nil || len(v.SourceVerifierIDs) != 2 {
		t.Errorf("total: %+v", v)
	}
	if v := get("all"); v.Score != 0 {
		t.Errorf("all: %+v", v)
	}
	if rc.VerifierOwner("total") != "agg" {
		t.Errorf("owner %q", rc.VerifierOwner("total"))
	}
}

func TestStepValidation(t *testing.T) {
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	cases := map[string]string{
		`{"id":"s","type":"deploy_sandbox","sandbox_name":"b"}`:                                                                                               `field "sandbox_mode": is required`,
		`{"id":"s","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"pod"}`:                                                                          `field "sandbox_mode": must be vm or container`,
		`{"id":"s","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"container"}`:                                                                    `field "image"`,
		`{"id":"s","type":"load_artifact","sandbox_name":"b"}`:                                                                                                `a source is required`,
		`{"id":"s","type":"load_artifact","artifact_id":"a"}`:                                                                                                 `a target is required`,
		`{"id":"s","type":"load_artifact","artifact_id":"a","sandbox_name":"b","urls":["http://x/y"]}`:                                                        `exactly one of`,
		`{"id":"s","type":"load_artifact","urls":["ftp://x"],"sandbox_name":"b"}`:                                                                             `field "urls"`,
		`{"id":"s","type":"verify_sandbox","sandbox_name":"b","criteria":[]}`:                                                                                 `field "criteria": is required`,
		`{"id":"s","type":"verify_sandbox","sandbox_name":"b","agent_name":"a","criteria":[{"type":"x"}]}`:                                                    `not both`,
		`{"id":"s","type":"verify_sandbox","sandbox_name":"b","criteria":[{"type":"probe_file_contains","paths":["x"]}]}`:                                     `expected (a regex) or value`,
		`{"id":"s","type":"verify_sandbox","sandbox_name":"b","score_aggregator":"median","criteria":[{"type":"x"}]}`:                                         `score_aggregator must be`,
		`{"id":"s","type":"agent_prompt_response_verifier","prompt_id":"p","criteria":[{"type":"response_contains","needles":[]}]}`:                           `non-empty needles`,
		`{"id":"s","type":"agent_prompt_response_verifier","prompt_id":"p","criteria":[{"type":"response_magic"}]}`:                                           `unknown type "response_magic"`,
		`{"id":"s","type":"agent_prompt_response_verifier","prompt_id":"p","criteria":[{"type":"response_regex_present","pattern":"x","flags":["VERBOSE"]}]}`: `unknown regex flag`,
		`{"id":"s","type":"aggregate_verifiers"}`:                                                                                                             `field "verifier_ids": is required`,
		`{"id":"s","type":"teardown_sandboxes"}`:                                                                                                              `name at least one`,
		`{"id":"s","type":"teardown_sandboxes","sandbox_names":["b"],"fail_task_on_error":true}`:                                                              `must be false for teardown_sandboxes`,
	}
	for js, want := range cases {
		_, err := r.ParseTask("t", 1, []byte("["+js+"]"))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `(id "s")`) {
			t.Errorf("%s:\n  got  %v\n  want …%s…", js, err, want)
		}
	}
}

func TestDeploySandboxRules(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.run(t, `[
	  {"id":"a","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"b","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"}]`, nil)
	if !errors.Is(err, runner.ErrDuplicateName) {
		t.Errorf("duplicate name: %v", err)
	}
	_, _, err = f.run(t, `[{"id":"c","type":"deploy_sandbox","sandbox_name":"c","sandbox_mode":"container","image":"x:1"}]`, nil)
	if !errors.Is(err, sandbox.ErrNotSupported) {
		t.Errorf("container on local: %v", err)
	}
	_, _, err = f.run(t, `[{"id":"d","type":"deploy_sandbox","sandbox_name":"d","sandbox_mode":"vm","sandbox_type":"nope"}]`, nil)
	if !errors.Is(err, runner.ErrUnknownProvider) {
		t.Errorf("unknown provider: %v", err)
	}
	// user_overrides.sandbox wins over the step; a fallback chain tries the
	// next provider when one fails.
	rc, _, err := f.run(t, `[{"id":"e","type":"deploy_sandbox","sandbox_name":"e","sandbox_mode":"vm","sandbox_type":"nope"}]`,
		map[string]any{"metadata": map[string]any{"user_overrides": map[string]any{"sandbox": "flaky,local"}}})
	if err != nil {
		t.Fatal(err)
	}
	if s := rc.Sandboxes(); len(s) != 1 || s[0].SandboxType != "local" {
		t.Errorf("fallback chain: %+v", s)
	}
	_, _, err = f.run(t, `[{"id":"g","type":"deploy_sandbox","sandbox_name":"g","sandbox_mode":"container","image":"i"}]`,
		map[string]any{"metadata": map[string]any{"user_overrides": map[string]any{"sandbox": "local,flaky"}}})
	if err == nil || !strings.Contains(err.Error(), "All 2 providers failed") {
		t.Errorf("chain failure: %v", err)
	}
}

func TestTeardownSandboxesMidRun(t *testing.T) {
	f := newFixture(t)
	rc, res, err := f.run(t, `[
	  {"id":"a","type":"deploy_sandbox","sandbox_name":"a","sandbox_mode":"vm"},
	  {"id":"b","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"vm"},
	  {"id":"down","type":"teardown_sandboxes","sandbox_names":["a","ghost"]},
	  {"id":"check","type":"verify_sandbox","sandbox_name":"a","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"true"}],"fail_task_on_error":false}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := rc.Metadata("torn_down_sandbox_ids")
	if l, _ := ids.([]any); len(l) != 1 || l[0] != rc.Sandboxes()[0].SandboxID {
		t.Errorf("torn_down_sandbox_ids %v", ids)
	}
	if len(res.Failed) != 2 || res.Failed[0].StepID != "down" || !strings.Contains(res.Failed[0].Error, `"ghost"`) ||
		res.Failed[1].StepID != "check" || !strings.Contains(res.Failed[1].Error, "torn down") {
		t.Errorf("failures %+v", res.Failed)
	}
	n, err := f.r.TeardownRun(context.Background(), rc, 0)
	if err != nil || n != 1 {
		t.Errorf("run teardown terminated %d (%v), want 1 (b)", n, err)
	}
	if left, _ := os.ReadDir(f.root); len(left) != 0 {
		t.Errorf("leftover work folders %v", left)
	}
}

func TestLoadArtifactURLs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("from " + r.URL.Path))
	}))
	defer srv.Close()
	f := newFixture(t)
	rc, _, err := f.run(t, `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"l","type":"load_artifact","sandbox_name":"box","urls":["`+srv.URL+`/a.txt",{"url":"`+srv.URL+`/b","filename":"named.txt"}]},
	  {"id":"v","type":"verify_sandbox","sandbox_name":"box","base_dir":"/loaded","verifier_id":"v","criteria":[
	    {"type":"probe_file_contains","paths":["a.txt"],"value":"from /a.txt"},
	    {"type":"probe_file_contains","paths":["named.txt"],"value":"from /b"}]}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := rc.Verification("v"); v.Score != 1 {
		t.Errorf("verification %+v", v)
	}
	_, _, err = f.run(t, `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"l","type":"load_artifact","sandbox_name":"box","urls":["`+srv.URL+`/missing"]}]`, nil)
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("missing URL: %v", err)
	}
	// step_params override the artifact per run.
	f.putFile(t, "other", "o.txt", "other")
	rc, _, err = f.run(t, `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"l","type":"load_artifact","sandbox_name":"box","urls":["`+srv.URL+`/a.txt"]},
	  {"id":"v","type":"verify_sandbox","sandbox_name":"box","verifier_id":"v","criteria":[
	    {"type":"probe_file_exists","paths":["/elsewhere/o.txt"]}]}]`,
		map[string]any{"metadata": map[string]any{"user_overrides": map[string]any{"step_params": map[string]any{
			"l": map[string]any{"artifact_id": "other", "destination_path": "/elsewhere"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := rc.Verification("v"); v.Score != 1 {
		t.Errorf("step_params: %+v", v)
	}
}

// A retry re-deploys the span's sandbox: the first one is terminated and
// recorded under rolled_back_sandboxes.
func TestRetryRollsBackSandboxes(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			http.Error(w, "flaky", http.StatusInternalServerError)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	f := newFixture(t)
	rc, res, err := f.run(t, `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"fetch","type":"load_artifact","sandbox_name":"box","urls":["`+srv.URL+`/f.txt"],
	   "retry_config":{"retry_from_step_id":"box","max_retries":1}},
	  {"id":"v","type":"verify_sandbox","sandbox_name":"box","verifier_id":"v","criteria":[
	    {"type":"probe_file_contains","paths":["/loaded/f.txt"],"value":"ok"}]}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runner.StatusCompleted || len(res.Failed) != 1 || !res.Failed[0].Retried {
		t.Errorf("result %s %+v", res.Status, res.Failed)
	}
	resets, _ := rc.Metadata("retry_resets")
	l, _ := resets.([]any)
	if len(l) != 1 {
		t.Fatalf("retry_resets %v", resets)
	}
	rb := l[0].(map[string]any)["rolled_back_sandboxes"].(map[string]any)["deployed_sandboxes"].([]any)
	live := rc.Sandboxes()
	if len(rb) != 1 || len(live) != 1 || rb[0] == live[0].SandboxID {
		t.Errorf("rolled back %v, live %+v", rb, live)
	}
	if v, _ := rc.Verification("v"); v.Score != 1 {
		t.Errorf("verification %+v", v)
	}
	if left, _ := os.ReadDir(f.root); len(left) != 1 {
		t.Errorf("work folders: %v (want only the redeployed one)", left)
	}
}
