package steps_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

// Bad fields of built-in steps, nested ones included, are reported naming
// the step index, the step id and the field, in words (no Go type names).
func TestBadFieldMessages(t *testing.T) {
	for js, want := range map[string]string{
		`[{"id":"l","type":"load_artifact","sandbox_name":"b","artifacts":[{"id":1}]}]`:                                                   `step 1 (id "l"): field "artifacts.id": must be a string, got a number`,
		`[{"id":"l","type":"load_artifact","sandbox_name":"b","artifacts":"x"}]`:                                                          `step 1 (id "l"): field "artifacts": must be a list, got a string`,
		`[{"id":"l","type":"load_artifact","sandbox_name":"b","urls":[5]}]`:                                                               `step 1 (id "l"): field "urls": a url entry is a string or {url, filename}`,
		`[{"id":"d","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"vm","network_policy":{"mode":"allowlist","hosts":["x"]}}]`: `step 1 (id "d"): field "network_policy": has no field "hosts"`,
		`[{"id":"d","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"vm","env_vars":{"A":1}}]`:                                  `step 1 (id "d"): field "env_vars": must be a string, got a number`,
		`[{"id":"d","type":"deploy_sandbox","sandbox_name":"b","sandbox_mode":"vm"},{"id":"e","type":"deploy_env","env_id":7}]`:           `step 2 (id "e"): field "env_id": must be a string, got a number`,
		`[{"id":"p","type":"prompt_agent","prompt":"hi","depends_on":"x"}]`:                                                               `step 1 (id "p"): field "depends_on": must be a list of step ids ("deploy") or {"task_step_id": "deploy"} objects, got a string`,
	} {
		_, err := runner.ParseSteps(steps.Builtin(), []byte(js))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s", js, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "Go value") || strings.Contains(err.Error(), "Go struct")) {
			t.Errorf("%s: a Go type in %q", js, err)
		}
		var se *runner.StepError
		if !errors.As(err, &se) || se.StepID == "" || se.Field == "" {
			t.Errorf("%s: %v does not place the problem", js, err)
		}
	}
}
