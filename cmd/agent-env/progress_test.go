package main

import (
	"strings"
	"testing"
)

// The spinner draws the running step's label, step lines printed through
// Writer erase it first, and finishing the last step erases it for good.
// (Tests never get a display from deps: their stdout is not a terminal.)
func TestProgressDisplay(t *testing.T) {
	c := newCLI(t)
	if p := c.deps(newSyncBuffer(), newSyncBuffer()).newProgress(); p != nil {
		t.Fatal("a progress display on a non-terminal stdout")
	}
	term := newSyncBuffer()
	p := newTermProgress(term, 0)
	p.Start("a", "[t.json] step 1/2 a (slow)")
	p.Start("b", "[t.json] step 2/2 b (slow)")
	p.show() // what the timer does after the delay
	term.waitFor(t, "step 1/2 a (slow) (+1 more)")
	w := p.Writer(term)
	if _, err := w.Write([]byte("a line\n")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(term.String(), "\033[2K\ra line\n") {
		t.Errorf("a printed line does not erase the spinner first: %q", term.String())
	}
	p.Done("a")
	term.waitFor(t, "step 2/2 b (slow)  ")
	p.Done("b")
	before := term.String()
	if _, err := w.Write([]byte("after\n")); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimPrefix(term.String(), before); got != "after\n" {
		t.Errorf("after the last step the writer still erases: %q", got)
	}
	p.Close()
	var nilp *progress
	nilp.Start("x", "y")
	nilp.Done("x")
	nilp.Close()
	if nilp.Writer(term) != term {
		t.Error("a nil display wraps the writer")
	}
}
