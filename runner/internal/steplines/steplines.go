// Package steplines prints the progress lines of task runs that share one
// output (a bundle run, an eval run): "[label] step 2/3 load
// (load_artifact)" when a step starts, "[label] step 2/3 load failed in
// 0.4s: <error>" when it fails and, when asked, "[label] step 2/3 load
// done in 0.4s" when it succeeds. A Writer serialises the lines of
// concurrent runs, so each line stays whole.
//
//	out := steplines.New(w)
//	ro := out.Wire(&runner.RunOptions{}, steplines.Steps{Label: "tasks/hello.json", Done: true})
//	res, err := r.Run(ctx, task, rc, ro)
package steplines

import (
	"fmt"
	"io"
	"sync"

	"github.com/agentenv/agentenv/runner"
)

// Writer serialises lines from concurrent runs.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// New returns a Writer printing to w.
func New(w io.Writer) *Writer { return &Writer{w: w} }

// Printf prints one formatted line (the format carries its newline).
func (w *Writer) Printf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintf(w.w, format, args...)
}

// Steps says how one run's step lines look and who else hears of them.
type Steps struct {
	// Label opens every line, in brackets.
	Label string
	// Done prints a line for a step that succeeds too.
	Done bool
	// OnStart, when set, is called after a step's start line is printed;
	// OnComplete before its end line is. Both get Label.
	OnStart    func(label string, i, n int, d *runner.StepDef)
	OnComplete func(label string, i, n int, d *runner.StepDef, secs float64, err error)
}

// Wire sets ro's OnStepStart and OnStepComplete to print s's lines and
// returns ro.
func (w *Writer) Wire(ro *runner.RunOptions, s Steps) *runner.RunOptions {
	ro.OnStepStart = func(i, n int, d *runner.StepDef) {
		w.Printf("[%s] step %d/%d %s (%s)\n", s.Label, i+1, n, d.ID, d.Type)
		if s.OnStart != nil {
			s.OnStart(s.Label, i, n, d)
		}
	}
	ro.OnStepComplete = func(i, n int, d *runner.StepDef, secs float64, err error) {
		if s.OnComplete != nil {
			s.OnComplete(s.Label, i, n, d, secs, err)
		}
		switch {
		case err != nil:
			w.Printf("[%s] step %d/%d %s failed in %.1fs: %v\n", s.Label, i+1, n, d.ID, secs, err)
		case s.Done:
			w.Printf("[%s] step %d/%d %s done in %.1fs\n", s.Label, i+1, n, d.ID, secs)
		}
	}
	return ro
}
