package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/runner"
)

// failUnder is --fail-under SCORE of run, task run and eval run: CI gates
// on a score with it. Unset, a low score still exits 0 (as the reference
// CLI does); set, a score below it exits 2 (exitScoreBelow).
type failUnder struct {
	set       bool
	threshold float64
}

func addFailUnder(cmd *cobra.Command) *failUnder {
	f := &failUnder{}
	cmd.Flags().Var(f, "fail-under", "exit 2 when the mean score of the runs is below SCORE (0..1)")
	return f
}

func (f *failUnder) String() string {
	if !f.set {
		return ""
	}
	return strconv.FormatFloat(f.threshold, 'g', -1, 64)
}
func (f *failUnder) Type() string { return "SCORE" }
func (f *failUnder) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > 1 {
		return fmt.Errorf("want a score from 0 to 1, got %q", s)
	}
	f.set, f.threshold = true, v
	return nil
}

// check returns a *scoreBelowError when the score is below the threshold.
func (f *failUnder) check(score float64) error {
	if f == nil || !f.set || score >= f.threshold {
		return nil
	}
	return &scoreBelowError{score: score, threshold: f.threshold}
}

// scoreBelowError exits 2.
type scoreBelowError struct{ score, threshold float64 }

func (e *scoreBelowError) Error() string {
	return fmt.Sprintf("mean score %.3g is below --fail-under %g", e.score, e.threshold)
}

// runScore is a run's score for --fail-under: the mean of its
// verification scores, 0 when it has none.
func runScore(rc *runner.RunContext) float64 {
	s, _ := rc.MeanScore()
	return s
}

// mean of scores, 0 for none.
func mean(scores []float64) float64 {
	if len(scores) == 0 {
		return 0
	}
	sum := 0.0
	for _, s := range scores {
		sum += s
	}
	return sum / float64(len(scores))
}

// printFailing prints the verifier rows of a run that scored below 1:
// why the run lost points, without opening its context file.
func printFailing(w io.Writer, label string, rows []runner.FailingRow) {
	if len(rows) == 0 {
		return
	}
	if label != "" {
		label = " (" + label + ")"
	}
	fmt.Fprintf(w, "Failing criteria%s:\n", label)
	for _, r := range rows {
		fmt.Fprint(w, r.Text("  "))
	}
}
