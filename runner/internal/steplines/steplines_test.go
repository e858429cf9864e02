package steplines_test

import (
	"errors"
	"os"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/internal/steplines"
)

// Wire prints a start line for every step and an end line for a failed
// one; Done adds the end line of a step that succeeds.
func ExampleWriter_Wire() {
	out := steplines.New(os.Stdout)
	d := &runner.StepDef{ID: "load", Type: "load_artifact"}
	for _, done := range []bool{true, false} {
		ro := out.Wire(&runner.RunOptions{}, steplines.Steps{Label: "tasks/hello.json", Done: done})
		ro.OnStepStart(1, 3, d)
		ro.OnStepComplete(1, 3, d, 0.42, nil)
		ro.OnStepComplete(1, 3, d, 1.5, errors.New("boom"))
	}
	// Output:
	// [tasks/hello.json] step 2/3 load (load_artifact)
	// [tasks/hello.json] step 2/3 load done in 0.4s
	// [tasks/hello.json] step 2/3 load failed in 1.5s: boom
	// [tasks/hello.json] step 2/3 load (load_artifact)
	// [tasks/hello.json] step 2/3 load failed in 1.5s: boom
}
