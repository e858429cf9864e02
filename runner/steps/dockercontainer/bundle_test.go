package dockercontainer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner/bundle"
)

// copyBundle copies examples/bundles/coding-task into a temporary folder
// with the test image's shell built in, as its README says to do.
func copyBundle(t *testing.T, sh []byte, answer string) string {
	t.Helper()
	src := filepath.Join("..", "..", "..", "examples", "bundles", "coding-task")
	dst := filepath.Join(t.TempDir(), "coding-task")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "artifacts", "tests", "minish"), sh, 0o755); err != nil {
		t.Fatal(err)
	}
	if answer != "" {
		p := filepath.Join(dst, "artifacts", "agent", "agent.sh")
		b, _ := os.ReadFile(p)
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), "sum=5", answer, 1)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// The coding-task bundle end to end with no model: the scripted agent
// writes its answer, the unit tests run in the container built from the
// bundle, and the score follows their exit code (a wrong answer scores 0
// and fails the run); nothing is left on the engine.
func TestCodingTaskBundle(t *testing.T) {
	f := newFixture(t)
	sh := minish(t)
	for answer, want := range map[string]float64{"": 1, "sum=6": 0} {
		dir := copyBundle(t, sh, answer)
		b, err := bundle.LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		ctx := context.Background()
		m, err := bundle.Materialise(ctx, b, bundle.Stores{Documents: f.svc.Documents, Artifacts: f.arts, LockDir: t.TempDir()}, f.r.Steps(), &out, nil)
		if err != nil {
			t.Fatalf("materialise: %v", err)
		}
		rep, err := bundle.Run(ctx, f.r, f.svc, m, &bundle.RunOptions{Out: &out, Documents: f.svc.Documents})
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
		if len(rep.Runs) != 1 || len(rep.Contexts()) != 1 {
			t.Fatalf("runs: %d\n%s", len(rep.Runs), out.String())
		}
		rc := rep.Contexts()[0]
		v, err := rc.Verification("unit_tests")
		if err != nil || v.Score != want {
			t.Errorf("answer %q: unit_tests = %+v, %v; want score %g\n%s", answer, v, err, want, out.String())
		}
		if outcome := rep.Runs[0].Outcome; (want == 1) != (outcome == bundle.Passed) {
			t.Errorf("answer %q: outcome %q\n%s", answer, outcome, out.String())
		}
		res, _ := rc.Metadata("script_results")
		if !strings.Contains(toJSON(res), `"wrote":"solution/answer.txt"`) {
			t.Errorf("script_results = %s", toJSON(res))
		}
		sbs := rc.Sandboxes()
		if len(sbs) != 1 {
			t.Fatalf("sandboxes: %v", sbs)
		}
		if left := f.labelled(t, sbs[0].SandboxID+"-containers"); len(left) != 0 {
			t.Errorf("answer %q: left on the engine after the run: %v", answer, left)
		}
	}
}
