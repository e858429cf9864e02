package steps_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

// A field a built-in step parses but does not act on is refused when the
// task is parsed, naming the step, the field and that it is not supported
// yet; it is never silently dropped.
func TestUnsupportedFieldsRefused(t *testing.T) {
	const rv = `{"id":"j","type":"rubrics_verifier","prompt_id":"p","criteria":[{"id":"c","criterion":"ok"}]`
	for js, field := range map[string]string{
		`[` + rv + `,"use_agent_judge":true}]`:                  "use_agent_judge",
		`[` + rv + `,"judge_a2a_agent_id":"judge"}]`:            "judge_a2a_agent_id",
		`[` + rv + `,"judge_sandbox_type":"docker"}]`:           "judge_sandbox_type",
		`[` + rv + `,"judge_priority":1}]`:                      "judge_priority",
		`[` + rv + `,"agent_name":"a"}]`:                        "agent_name",
		`[` + rv + `,"trajectory_filter":{"roles":["agent"]}}]`: "trajectory_filter",
		`[` + rv + `,"max_thinking_tokens":1000}]`:              "max_thinking_tokens",
		`[` + rv + `,"effort":"high"}]`:                         "effort",
		`[{"id":"l","type":"load_artifact","sandbox_name":"b","artifact_id":"x","snapshot_after_load":true}]`: "snapshot_after_load",
	} {
		_, err := runner.ParseSteps(steps.Builtin(), []byte(js))
		var se *runner.StepError
		if !errors.As(err, &se) || se.Field != field {
			t.Errorf("%s: got %v, want an error on field %q", js, err, field)
			continue
		}
		typ := "rubrics_verifier"
		if field == "snapshot_after_load" {
			typ = "load_artifact"
		}
		if msg := err.Error(); !strings.Contains(msg, "not supported yet by "+typ) || !strings.Contains(msg, `field "`+field+`"`) {
			t.Errorf("%s: %q does not name the step type, the field and that it is unsupported", js, msg)
		}
	}
	// The direct judge, spelled out as reference tasks do, stays accepted.
	if _, err := runner.ParseSteps(steps.Builtin(), []byte(`[`+rv+`,"use_agent_judge":false}]`)); err != nil {
		t.Errorf("use_agent_judge false: %v", err)
	}
}
