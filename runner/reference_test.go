package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

// TestReferenceCorpus: the task files of testdata/reference, written in
// the reference's documented forms (both depends_on forms, every built-in
// step type with its reference fields), are accepted, stored by
// CreateTask and read back by LoadTask as written: every key a step was
// written with comes back with the same value, the only additions being
// version and fail_task_on_error. The stored form is the golden
// <name>.stored.json (go test -run TestReferenceCorpus -update).
func TestReferenceCorpus(t *testing.T) {
	files, _ := filepath.Glob("testdata/reference/*.json")
	ctx := context.Background()
	docs, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer docs.Close()
	reg := steps.Builtin()
	r := runner.New(&runner.Options{Steps: reg})
	seen := map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if strings.HasPrefix(name, "bad_") || strings.HasSuffix(name, ".stored") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// SkipValidation: the corpus names entities no store holds.
			if _, err := r.CreateTask(ctx, docs, &runner.Services{Documents: docs}, name, in, &runner.CreateTaskOptions{SkipValidation: true}); err != nil {
				t.Fatalf("task create refused a reference-format file:\n%v", err)
			}
			task, err := r.LoadTask(ctx, docs, registry.Ref{ID: name})
			if err != nil {
				t.Fatal(err)
			}
			stored, err := json.MarshalIndent(task.Steps, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			var written, back []map[string]any
			if err := json.Unmarshal(in, &written); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(stored, &back); err != nil {
				t.Fatal(err)
			}
			for i, w := range written {
				seen[w["type"].(string)] = true
				for k, v := range w {
					if rc, ok := v.(map[string]any); ok && k == "retry_config" && rc["go_to_step_id"] != nil {
						// The reference reads go_to_step_id as an alias and
						// writes only retry_from_step_id; so do we.
						v = map[string]any{"retry_from_step_id": rc["go_to_step_id"], "max_retries": rc["max_retries"]}
					}
					if k != "version" && !reflect.DeepEqual(v, back[i][k]) {
						t.Errorf("step %d (%v) %s: wrote %s, read back %s", i+1, w["id"], k, asJSON(v), asJSON(back[i][k]))
					}
				}
				for k := range back[i] {
					if _, ok := w[k]; !ok && k != "version" && k != "fail_task_on_error" {
						t.Errorf("step %d (%v): %s was added on the way through the store", i+1, w["id"], k)
					}
				}
			}
			golden := filepath.Join("testdata", "reference", name+".stored.json")
			stored = append(stored, '\n')
			if *update {
				if err := os.WriteFile(golden, stored, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(stored, want) {
				t.Errorf("stored form differs from %s (-update rewrites it):\n%s", golden, stored)
			}
		})
	}
	for _, typ := range reg.Types() {
		if !seen[typ] {
			t.Errorf("built-in step type %s has no step in testdata/reference", typ)
		}
	}
}

// A file using step types this build does not have (plugin types of the
// reference) is refused naming each unknown type once, with every problem
// placed on its step.
func TestReferenceCorpusUnknownTypes(t *testing.T) {
	in, err := os.ReadFile("testdata/reference/bad_plugin_types.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = runner.ParseSteps(steps.Builtin(), in)
	var te *runner.TaskError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a *runner.TaskError", err)
	}
	if got := te.UnknownTypes(); !slices.Equal(got, []string{"install_agent", "review", "run_code"}) {
		t.Errorf("unknown types = %v", got)
	}
	var where []string
	for _, p := range te.Problems {
		if !errors.Is(p, runner.ErrUnknownStepType) || p.Field != "type" {
			t.Errorf("unexpected problem: %v", p)
		}
		where = append(where, p.StepID)
	}
	if !slices.Equal(where, []string{"install", "code", "review", "again"}) {
		t.Errorf("problems on steps %v", where)
	}
	msg := err.Error()
	for _, want := range []string{"4 problems in the task:", `step 2 (id "install"): field "type": Unknown task step type "install_agent"`,
		"unknown step types: install_agent, review, run_code", "agent-env plugin list"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}

func asJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
