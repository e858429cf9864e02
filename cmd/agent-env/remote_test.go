package main

import (
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

// A run bound for remote workers that would use the local-only process
// provider is refused before submit, naming the step.
func TestRefuseLocalOnly(t *testing.T) {
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	task, err := r.ParseTask("t", 1, []byte(`[{"id":"box","type":"deploy_sandbox","sandbox_name":"s","sandbox_mode":"vm"}]`))
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.NewRunContext(map[string]any{"metadata": map[string]any{
		"user_overrides": map[string]any{"sandbox": "process"}}}, nil)
	err = refuseLocalOnly(task, rc, "local")
	if err == nil || !strings.Contains(err.Error(), `id "box"`) || !strings.Contains(err.Error(), `"process"`) {
		t.Fatalf("err = %v, want a refusal naming step box and the process provider", err)
	}
	if err := refuseLocalOnly(task, runner.NewRunContext(nil, nil), "local"); err != nil {
		t.Fatalf("a local default was refused: %v", err)
	}
}
