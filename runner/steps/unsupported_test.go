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
		`[` + rv + `,"agent_name":"a"}]`:           "agent_name",
		`[` + rv + `,"max_thinking_tokens":1000}]`: "max_thinking_tokens",
		`[` + rv + `,"effort":"high"}]`:            "effort",
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
	// The direct judge, spelled out as reference tasks do, and the agent
	// judge with its thinking knobs are accepted.
	for _, js := range []string{`[` + rv + `,"use_agent_judge":false}]`, `[` + rv + `,"use_agent_judge":true,"effort":"high","max_thinking_tokens":1000}]`} {
		if _, err := runner.ParseSteps(steps.Builtin(), []byte(js)); err != nil {
			t.Errorf("%s: %v", js, err)
		}
	}
}
