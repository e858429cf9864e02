package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A run paused at a review step is listed by `review list` and released by
// `review continue` from another command (its own store connection); a
// second decision is refused, and a decision on no review names it.
func TestReviewListContinue(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "t.json"), `[
	  {"id":"gate","type":"review","label":"look at it","timeout_seconds":120,"poll_interval_seconds":0.05}]`)
	if code, out, stderr := c.run("task", "create", f, "--id", "gated"); code != 0 {
		t.Fatalf("create: %d %s %s", code, out, stderr)
	}
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, stderr := c.run("task", "run", "--id", "gated", "--output-dir", filepath.Join(dir, "out"))
		done <- result{code, out, stderr}
	}()
	row := regexp.MustCompile(`(gated-[a-z0-9]{8})\s+gate\s+look at it`)
	var instance string
	deadline := time.Now().Add(60 * time.Second)
	for instance == "" {
		code, out, stderr := c.run("review", "list")
		if code != 0 {
			t.Fatalf("list: %d %s %s", code, out, stderr)
		}
		if m := row.FindStringSubmatch(out); m != nil {
			instance = m[1]
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the run ended before its review was listed: %d\n%s\n%s", r.code, r.out, r.err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the review was never listed")
		}
	}
	code, out, stderr := c.run("review", "continue", "--instance-id", instance, "--step-id", "gate", "--decided-by", "tester")
	if code != 0 || out != "Recorded continue on review gate of "+instance+".\n" {
		t.Fatalf("continue: %d %q %s", code, out, stderr)
	}
	r := <-done
	if r.code != 0 || !strings.Contains(r.out, "Task completed!") {
		t.Fatalf("run: %d\n%s\n%s", r.code, r.out, r.err)
	}
	if inst := c.instance(instance); inst.Context["metadata"].(map[string]any)["review_decisions"] == nil {
		t.Errorf("instance context lacks review_decisions: %v", inst.Context["metadata"])
	}
	code, out, _ = c.run("review", "list", "-o", "json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("list after the decision: %d %q", code, out)
	}
	code, _, stderr = c.run("review", "abort", "--instance-id", instance, "--step-id", "gate")
	if code == 0 || !strings.Contains(stderr, "no review awaiting a decision") {
		t.Errorf("second decision: %d %s", code, stderr)
	}
	code, _, stderr = c.run("review", "continue", "--instance-id", instance)
	if code == 0 || !strings.Contains(stderr, "step-id") {
		t.Errorf("missing --step-id: %d %s", code, stderr)
	}
}
