package runner_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentenv/agentenv/runner"
)

// FuzzParseSteps checks that no input makes the parser panic and that every
// refusal is a *StepError (so the CLI can name the step and field).
// Run longer with: go test ./runner -run '^$' -fuzz FuzzParseSteps -fuzztime 1m
func FuzzParseSteps(f *testing.F) {
	files, _ := filepath.Glob("testdata/dag/*.txtar")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		_, sec := parseTxtar(b)
		f.Add([]byte(sec["task.json"]))
	}
	reg := probeRegistry(newProbe())
	f.Fuzz(func(t *testing.T, data []byte) {
		defs, err := runner.ParseSteps(reg, data)
		if err != nil {
			var se *runner.StepError
			if !errors.As(err, &se) {
				t.Fatalf("refusal is not a *StepError: %v", err)
			}
			return
		}
		if len(defs) == 0 {
			t.Fatal("accepted an empty task")
		}
		if err := runner.ValidateDAG(defs); err != nil {
			t.Fatalf("accepted a task that fails ValidateDAG: %v", err)
		}
	})
}
