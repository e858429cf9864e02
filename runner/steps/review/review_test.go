package review_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
	"github.com/agentenv/agentenv/runner/steps/review"
)

// The child half of the two-process tests: another process opens the same
// store, waits for the review to be awaiting, and records a decision, as
// `agent-env review continue|abort` does.
func TestMain(m *testing.M) {
	if db := os.Getenv("REVIEW_TEST_CHILD_DB"); db != "" {
		os.Exit(decideFromChild(db, os.Getenv("REVIEW_TEST_CHILD_DECISION")))
	}
	os.Exit(m.Run())
}

func decideFromChild(db, decision string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	docs, err := sqlite.Open(ctx, db, nil)
	if err != nil {
		return 2
	}
	defer docs.Close()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		list, err := review.ListAwaiting(ctx, docs, "")
		if err == nil && len(list) == 1 {
			if _, err := review.Decide(ctx, docs, list[0].InstanceID, list[0].StepID, decision, "child-process"); err != nil {
				return 3
			}
			return 0
		}
		select {
		case <-ctx.Done():
			return 4
		case <-tick.C:
		}
	}
}

func openDocs(t *testing.T) (registry.DocumentStore, string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "documents.db")
	docs, err := sqlite.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docs.Close() })
	return docs, db
}

// runWithChild runs a task holding a review while a child process records
// decision on it through the same SQLite file.
func runWithChild(t *testing.T, decision, task string) (*runner.RunContext, error) {
	t.Helper()
	docs, db := openDocs(t)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "REVIEW_TEST_CHILD_DB="+db, "REVIEW_TEST_CHILD_DECISION="+decision)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	parsed, err := r.ParseTask("t", 1, []byte(task))
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.NewRunContext(map[string]any{"prompt_responses": []any{
		map[string]any{"prompt_id": "p", "step_id": "prompt", "response": "the draft"}}}, &runner.Services{Documents: docs})
	_, runErr := r.Run(context.Background(), parsed, rc, &runner.RunOptions{InstanceID: "t-review01"})
	if err := child.Wait(); err != nil {
		t.Fatalf("child process: %v", err)
	}
	rec, err := review.Get(context.Background(), docs, "t-review01", "gate")
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != decision || rec.DecidedBy != "child-process" || rec.Label != "check the draft" || rec.Upstream["response"] != "the draft" {
		t.Errorf("record after the run: %+v", rec)
	}
	return rc, runErr
}

// A decision recorded by another process releases the run: continue
// writes metadata.review_decisions and later steps run.
func TestReviewContinueFromAnotherProcess(t *testing.T) {
	rc, err := runWithChild(t, review.StateContinue, `[{"id":"gate","type":"review","label":"check the draft","timeout_seconds":60,"poll_interval_seconds":0.02}]`)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := rc.Metadata("review_decisions")
	want := map[string]any{"gate": map[string]any{"decision": "continue", "decided_by": "child-process"}}
	if !equalJSON(got, want) {
		t.Errorf("review_decisions = %v, want %v", got, want)
	}
}

// Abort fails the step, so the steps after it never run.
func TestReviewAbortFromAnotherProcess(t *testing.T) {
	rc, err := runWithChild(t, review.StateAbort, `[{"id":"gate","type":"review","label":"check the draft","timeout_seconds":60,"poll_interval_seconds":0.02},
	 {"id":"after","type":"review","label":"never","timeout_seconds":60}]`)
	if !errors.Is(err, review.ErrAborted) || !strings.Contains(err.Error(), "child-process") {
		t.Fatalf("err = %v, want an abort naming who decided", err)
	}
	if _, ok := rc.Metadata("review_decisions"); ok {
		t.Error("an aborted review wrote review_decisions")
	}
	docs := rc.Services().Documents
	if _, err := review.Get(context.Background(), docs, "t-review01", "after"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("the step after an abort registered a review: %v", err)
	}
}

// No decision within timeout_seconds fails the step saying so.
func TestReviewTimesOut(t *testing.T) {
	docs, _ := openDocs(t)
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	parsed, err := r.ParseTask("t", 1, []byte(`[{"id":"gate","type":"review","timeout_seconds":0.05,"poll_interval_seconds":0.01}]`))
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.NewRunContext(nil, &runner.Services{Documents: docs})
	_, err = r.Run(context.Background(), parsed, rc, &runner.RunOptions{InstanceID: "t-timeout1"})
	if err == nil || !strings.Contains(err.Error(), `review "gate" timed out`) {
		t.Fatalf("err = %v", err)
	}
	// The review is still listed as awaiting; a late decision is recorded
	// but nothing waits for it any more, and a second one is refused.
	if _, err := review.Decide(context.Background(), docs, "t-timeout1", "gate", review.StateContinue, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := review.Decide(context.Background(), docs, "t-timeout1", "gate", review.StateAbort, ""); !errors.Is(err, review.ErrNotAwaiting) {
		t.Errorf("second decision: %v", err)
	}
	if _, err := review.Decide(context.Background(), docs, "t-timeout1", "nope", review.StateAbort, ""); !errors.Is(err, review.ErrNotAwaiting) {
		t.Errorf("decision on no review: %v", err)
	}
	if _, err := review.Decide(context.Background(), docs, "t-timeout1", "gate", "maybe", ""); err == nil {
		t.Error("an unknown decision was accepted")
	}
}

// Bad fields are refused at parse time, naming the step and the field.
func TestReviewBadInput(t *testing.T) {
	for js, want := range map[string]string{
		`[{"id":"g","type":"review","timeout_seconds":"soon"}]`:   `step 1 (id "g"): field "timeout_seconds": must be a number, got a string`,
		`[{"id":"g","type":"review","timeout_seconds":0}]`:        `step 1 (id "g"): field "timeout_seconds": must be positive`,
		`[{"id":"g","type":"review","poll_interval_seconds":-1}]`: `step 1 (id "g"): field "poll_interval_seconds": must be positive`,
		`[{"id":"g","type":"review","label":3}]`:                  `step 1 (id "g"): field "label": must be a string, got a number`,
		`[{"id":"g","type":"review","decision":"continue"}]`:      `step 1 (id "g"): field "decision"`,
	} {
		_, err := runner.ParseSteps(steps.Builtin(), []byte(js))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s", js, err, want)
		}
	}
}
