package bundle_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/bundle"
)

const okTask = `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm","sandbox_type":"local"},
 {"id":"v","type":"verify_sandbox","sandbox_name":"box","verifier_id":"v","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"true"}]}]`

// TestEvalFiles: evals/<name>.toml load and materialise through the
// ledger (an unchanged eval keeps its version); a file that is not .toml
// is refused; a pinned version of a bundle task must exist.
func TestEvalFiles(t *testing.T) {
	fsys := fstest.MapFS{
		"tasks/a.json":     {Data: []byte(okTask)},
		"evals/smoke.toml": {Data: []byte(`tasks = ["a"]`)},
	}
	b, err := bundle.Load(fsys, "b", "@local/p/b")
	if err != nil || len(b.Evals) != 1 || b.Contents() != "1 task, 0 artifacts, 1 eval" {
		t.Fatalf("load: %+v %v", b, err)
	}
	e := newEnv(t)
	for i, want := range []string{"evals/smoke.toml: v1 (new)", "evals/smoke.toml: v1, unchanged"} {
		var out bytes.Buffer
		m, err := bundle.Materialise(context.Background(), b, e.st, e.r.Steps(), &out, nil)
		if err != nil || !strings.Contains(out.String(), want) || len(m.Evals) != 1 || m.Evals[0].Tasks[0].TaskID != "@local/p/b/a" {
			t.Fatalf("materialise %d: %v\n%s", i, err, out.String())
		}
		runs, skipped, err := bundle.RunEvals(context.Background(), e.r, e.svc, m, nil, &bundle.RunOptions{Documents: e.st.Documents})
		if err != nil || len(runs) != 1 || runs[0].Report.Stats[0].Passed != 1 || runs[0].Report.TornDown != 1 || len(skipped) != 0 {
			t.Fatalf("run %d: %v %+v", i, err, runs)
		}
	}
	if _, err := bundle.Load(fstest.MapFS{"tasks/a.json": {Data: []byte(okTask)}, "evals/smoke.json": {Data: []byte(`[]`)}}, "b", "@local/p/b"); !errors.Is(err, bundle.ErrInvalid) ||
		!strings.Contains(err.Error(), "evals/smoke.json: an eval is evals/<name>.toml") {
		t.Errorf("evals/smoke.json: %v", err)
	}
	b.Evals[0].Raw = []byte(`tasks = [{task = "a", version = 7}]`)
	_, err = bundle.Materialise(context.Background(), b, e.st, e.r.Steps(), &bytes.Buffer{}, nil)
	if !errors.Is(err, bundle.ErrInvalid) || !strings.Contains(err.Error(), "evals/smoke.toml: tasks[0].version:") {
		t.Errorf("a pinned version that does not exist: %v", err)
	}
	if v, _ := e.st.Documents.Versions(context.Background(), registry.Evals, "@local/p/b/smoke"); len(v) != 1 {
		t.Errorf("%d eval versions, want 1", len(v))
	}
}
