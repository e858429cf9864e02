package bundle_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundle"
	"github.com/agentenv/agentenv/runner/bundles"
	"github.com/agentenv/agentenv/runner/sandbox/local"
	"github.com/agentenv/agentenv/runner/steps"
)

type env struct {
	st        bundle.Stores
	svc       *runner.Services
	r         *runner.Runner
	sandboxes string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	docs, err := sqlite.Open(context.Background(), filepath.Join(dir, "documents.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docs.Close() })
	objs, err := fsobject.New(filepath.Join(dir, "objects"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sbRoot := filepath.Join(dir, "sandboxes")
	reg := steps.Builtin()
	return &env{
		st:        bundle.Stores{Documents: docs, Artifacts: artifact.New(docs, objs, nil), LockDir: filepath.Join(dir, "locks")},
		svc:       &runner.Services{Documents: docs, Objects: objs, Sandboxes: map[string]runner.SandboxProvider{"local": local.New(sbRoot, nil)}},
		r:         runner.New(&runner.Options{Steps: reg}),
		sandboxes: sbRoot,
	}
}

func (e *env) run(t *testing.T, b *bundle.Bundle) (string, *bundle.Report) {
	t.Helper()
	var out bytes.Buffer
	m, err := bundle.Materialise(context.Background(), b, e.st, e.r.Steps(), &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := bundle.Run(context.Background(), e.r, e.svc, m, &bundle.RunOptions{Out: &out, Documents: e.st.Documents})
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), rep
}

var timing = regexp.MustCompile(`\d+\.\ds`)

func TestHelloTwice(t *testing.T) {
	e := newEnv(t)
	b, err := bundle.Locate("hello", bundles.FS())
	if err != nil {
		t.Fatal(err)
	}
	if b.IDRoot != "@local/agentenv-framework/hello" || b.Description != "Hello, agent-env: deploy a local sandbox, load a file, verify it." {
		t.Fatalf("bundle %+v", b)
	}
	out, rep := e.run(t, b)
	got := timing.ReplaceAllString(out, "Xs")
	got = regexp.MustCompile(`hello-[a-z0-9]{8}\n`).ReplaceAllString(got, "hello-ID\n")
	want := `artifacts/greeting: v1 (new)
tasks/hello.json: v1 (new)
[tasks/hello.json] step 1/3 box (deploy_sandbox)
[tasks/hello.json] step 1/3 box done in Xs
[tasks/hello.json] step 2/3 load (load_artifact)
[tasks/hello.json] step 2/3 load done in Xs
[tasks/hello.json] step 3/3 hello (verify_sandbox)
[tasks/hello.json] step 3/3 hello done in Xs
[tasks/hello.json] passed in Xs

Tasks:
  tasks/hello.json v1: passed (hello: 1), Xs, instance @local/agentenv-framework/hello/hello-ID
Tore down 1 sandbox.
`
	if got != want {
		t.Errorf("output\n%s\nwant\n%s", got, want)
	}
	inst, err := runner.GetInstance(context.Background(), e.st.Documents, rep.Runs[0].Result.InstanceID)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Status != runner.StatusCompleted || inst.CurrentStep != 3 {
		t.Errorf("instance %s %d/%d", inst.Status, inst.CurrentStep, inst.TotalSteps)
	}
	v := inst.Context["metadata"].(map[string]any)["verifications"].(map[string]any)["hello"].(map[string]any)
	if v["score"] != 1.0 || len(v["results"].([]any)) != 2 {
		t.Errorf("verification %v", v)
	}
	if left, _ := os.ReadDir(e.sandboxes); len(left) != 0 {
		t.Errorf("leftover work folders: %v", left)
	}

	// The second run writes no artifact, task or ledger row.
	before := snapshotStore(t, e)
	out, _ = e.run(t, b)
	if !strings.HasPrefix(out, "artifacts/greeting: v1, unchanged\ntasks/hello.json: v1, unchanged\n") {
		t.Errorf("second run output:\n%s", out)
	}
	if after := snapshotStore(t, e); after != before {
		t.Errorf("second run changed the stores:\n%s\nvs\n%s", before, after)
	}
}

func snapshotStore(t *testing.T, e *env) string {
	ctx := context.Background()
	var b strings.Builder
	for _, c := range []registry.Collection{registry.Artifacts, registry.Tasks} {
		docs, err := e.st.Documents.List(ctx, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			b.WriteString(string(c) + " " + d.ID + " " + string(rune('0'+d.Version)) + "\n")
		}
	}
	recs, err := e.st.Documents.QueryRecords(ctx, registry.BundleLedger, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		b.WriteString(r.Key + " " + string(r.Data) + "\n")
	}
	objs, _ := e.st.Artifacts.Objects().List(ctx, "")
	for _, o := range objs {
		b.WriteString(o.Key + "\n")
	}
	return b.String()
}

func TestChangedFolderBundle(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "mine")
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "Mine.\n")
	write("artifacts/note/note.txt", "bye\n")
	write("tasks/t.json", `[
	 {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	 {"id":"load","type":"load_artifact","sandbox_name":"box","artifact_id":"note"},
	 {"id":"v","type":"verify_sandbox","sandbox_name":"box","verifier_id":"v","criteria":[
	   {"type":"probe_file_contains","paths":["/loaded/note.txt"],"value":"hello"},
	   {"type":"probe_file_exists","paths":["/loaded/note.txt"]}]}]`)
	b, err := bundle.Locate(dir, bundles.FS())
	if err != nil {
		t.Fatal(err)
	}
	out, rep := e.run(t, b)
	if !strings.Contains(out, "artifacts/note: v1 (new)") || !strings.Contains(out, "tasks/t.json v1: scored below 1 (v: 0)") {
		t.Errorf("output:\n%s", out)
	}
	if rep.Failed() {
		t.Error("a low score is not a failure")
	}
	write("artifacts/note/note.txt", "hello\n")
	b, _ = bundle.Locate(dir, bundles.FS())
	out, _ = e.run(t, b)
	if !strings.Contains(out, "artifacts/note: v2 (changed)") || !strings.Contains(out, "tasks/t.json: v1, unchanged") || !strings.Contains(out, "passed (v: 1)") {
		t.Errorf("after a change:\n%s", out)
	}
}

func TestBadTaskWritesNothing(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "bad")
	_ = os.MkdirAll(filepath.Join(dir, "tasks"), 0o755)
	_ = os.MkdirAll(filepath.Join(dir, "artifacts", "a"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "artifacts", "a", "f.txt"), []byte("x"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "tasks", "ok.json"), []byte(`[{"id":"box","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"vm"}]`), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "tasks", "t.json"), []byte(`[{"id":"x","type":"verify_sandbox","sandbox_name":"b","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"true"}],"depends_on":[{"task_step_id":"later"}]},{"id":"later","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"vm"}]`), 0o644)
	b, err := bundle.Locate(dir, bundles.FS())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, err = bundle.Materialise(context.Background(), b, e.st, e.r.Steps(), &out, nil)
	if err == nil || !strings.Contains(err.Error(), `tasks/t.json: step 1 (id "x"): field "depends_on[0]"`) {
		t.Fatalf("err = %v", err)
	}
	if s := snapshotStore(t, e); s != "" {
		t.Errorf("a refused bundle wrote:\n%s", s)
	}
}

// A bundle's bare artifact names are rewritten to its @local ids in every
// declared entity reference, env_outcome_verifier's file_artifact_id
// included.
func TestBundleRewritesVerifierProgram(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "graded")
	for p, s := range map[string]string{
		"README.md":                 "Graded.\n",
		"artifacts/prog/verify.sh":  "#!/bin/sh\necho '[]'\n",
		"artifacts/notes/notes.txt": "hi\n",
		"tasks/t.json": `[{"id":"load","type":"load_artifact","env_id":"email","artifact_id":"notes"},
		  {"id":"grade","type":"env_outcome_verifier","env_id":"email","file_artifact_id":"prog","depends_on":["load"]}]`,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bundle.Locate(dir, bundles.FS())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	m, err := bundle.Materialise(context.Background(), b, e.st, e.r.Steps(), &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := m.Tasks[0].Task.Steps
	if got, want := string(steps[1].Fields["file_artifact_id"]), `"`+b.IDRoot+`/prog"`; got != want {
		t.Errorf("file_artifact_id = %s, want %s", got, want)
	}
	if got, want := string(steps[0].Fields["artifact_id"]), `"`+b.IDRoot+`/notes"`; got != want {
		t.Errorf("artifact_id = %s, want %s", got, want)
	}
}
