package bundle_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/agentenv/agentenv/runner/bundle"
	"github.com/agentenv/agentenv/runner/bundles"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestStepLinesGolden pins the lines a bundle run prints for every step:
// start, done, and failed with its error, then the task's outcome and the
// summary (timings and instance ids masked). testdata/steplines.golden is
// the expected output; -update rewrites it.
func TestStepLinesGolden(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "lines")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "tasks"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "tasks", "ok.json"), []byte(`[{"id":"box","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"vm"},
	 {"id":"check","type":"verify_sandbox","sandbox_name":"b","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"true"}],"depends_on":["box"]}]`), 0o644))
	must(os.WriteFile(filepath.Join(dir, "tasks", "z-fails.json"), []byte(`[{"id":"box","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"vm"},
	 {"id":"fetch","type":"load_artifact","sandbox_name":"b","urls":["http://127.0.0.1:1/x"],"depends_on":["box"]}]`), 0o644))
	b, err := bundle.Locate(dir, bundles.FS())
	must(err)
	var out bytes.Buffer
	m, err := bundle.Materialise(context.Background(), b, e.st, e.r.Steps(), &out, nil)
	must(err)
	out.Reset()
	// One task per run, so that the lines come in a fixed order.
	for _, task := range []string{"ok", "z-fails"} {
		_, err = bundle.Run(context.Background(), e.r, e.svc, m, &bundle.RunOptions{Out: &out, Documents: e.st.Documents, Tasks: []string{task}})
		must(err)
	}
	got := timing.ReplaceAllString(out.String(), "Xs")
	got = regexp.MustCompile(`@local/\S*/lines/`).ReplaceAllString(got, "@local/ROOT/")
	got = regexp.MustCompile(`-[a-z0-9]{8}\n`).ReplaceAllString(got, "-ID\n")
	got = regexp.MustCompile(`dial tcp 127\.0\.0\.1:1: [^"\n]*`).ReplaceAllString(got, "dial tcp 127.0.0.1:1: ERR")
	golden := filepath.Join("testdata", "steplines.golden")
	if *update {
		must(os.MkdirAll("testdata", 0o755))
		must(os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	must(err)
	if got != string(want) {
		t.Errorf("output\n%s\nwant (%s)\n%s", got, golden, want)
	}
}
