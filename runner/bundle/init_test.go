package bundle_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundle"
)

// Init pins single and list references to the latest version, keeps
// versions already given, reports references it cannot pin, and writes
// nothing when a reference does not resolve.
func TestInitPins(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, p := range []struct{ id, body string }{{"a", "1"}, {"a", "2"}, {"b", "1"}} {
		if _, err := e.st.Artifacts.PutFile(ctx, p.id, artifact.FileInput{Filename: "f.txt", Body: strings.NewReader(p.body)}); err != nil {
			t.Fatal(err)
		}
	}
	task, err := e.r.ParseTask("team/my task", 3, []byte(`[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"one","type":"load_artifact","sandbox_name":"box","artifact_id":"a"},
	  {"id":"many","type":"load_artifact","sandbox_name":"box","artifacts":[{"id":"b"},{"id":"a","version":1}],"depends_on":[{"task_step_id":"one"}]},
	  {"id":"down","type":"teardown_sandboxes","env_ids":["some-env"]}]`))
	if err != nil {
		t.Fatal(err)
	}
	docsFor := func(string) registry.DocumentStore { return e.st.Documents }
	dir := filepath.Join(t.TempDir(), "out")
	res, err := bundle.Init(ctx, task, docsFor, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.TaskFile != filepath.Join(dir, "tasks", "my-task.json") {
		t.Errorf("task file %s", res.TaskFile)
	}
	if len(res.Pins) != 2 || res.Pins[0] != (bundle.Pin{StepID: "one", Field: "artifact_id", EntityID: "a", Version: 2, Collection: "artifacts"}) ||
		res.Pins[1] != (bundle.Pin{StepID: "many", Field: "artifacts[0]", EntityID: "b", Version: 1, Collection: "artifacts"}) {
		t.Errorf("pins %+v", res.Pins)
	}
	if len(res.Unpinned) != 1 || res.Unpinned[0] != (bundle.Unpinned{StepID: "down", Field: "env_ids[0]", EntityID: "some-env"}) {
		t.Errorf("unpinned %+v", res.Unpinned)
	}
	b, err := os.ReadFile(res.TaskFile)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, w := range []string{`{"id":"one","type":"load_artifact","artifact_id":"a","artifact_version":2,"sandbox_name":"box"}`,
		`"artifacts":[{"id":"b","version":1},{"id":"a","version":1}]`, `"depends_on":[{"task_step_id":"one"}]`,
		`{"id":"down","type":"teardown_sandboxes","env_ids":["some-env"]}`} {
		if !strings.Contains(got, w) {
			t.Errorf("task file lacks %s:\n%s", w, got)
		}
	}
	// The file is a valid bundle task again.
	if _, err := runner.ParseSteps(e.r.Steps(), b); err != nil {
		t.Errorf("the written task does not parse: %v", err)
	}
	if _, err := bundle.LoadDir(dir); err != nil {
		t.Errorf("the folder does not load as a bundle: %v", err)
	}

	// An unresolvable reference names the step and field; nothing written.
	bad, err := e.r.ParseTask("bad", 1, []byte(`[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"l","type":"load_artifact","sandbox_name":"box","artifact_id":"ghost"}]`))
	if err != nil {
		t.Fatal(err)
	}
	badDir := filepath.Join(t.TempDir(), "bad")
	_, err = bundle.Init(ctx, bad, docsFor, badDir, nil)
	var se *runner.StepError
	if !errors.As(err, &se) || se.StepID != "l" || se.Field != "artifact_id" || !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("unknown reference: %v", err)
	}
	if _, err := os.Stat(badDir); !os.IsNotExist(err) {
		t.Errorf("a refused init wrote %s", badDir)
	}
	if _, err := bundle.Init(ctx, task, docsFor, dir, nil); !errors.Is(err, bundle.ErrInvalid) {
		t.Errorf("init into a non-empty folder: %v", err)
	}
	if _, err := bundle.Init(ctx, task, docsFor, filepath.Join(t.TempDir(), "n"), &bundle.InitOptions{Name: "../x"}); !errors.Is(err, bundle.ErrInvalid) {
		t.Errorf("a name with a path: %v", err)
	}
}
