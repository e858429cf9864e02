package a2agates_test

import (
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
	"github.com/agentenv/agentenv/runner/steps/a2agates"
)

// Bad fields of each agent gate are refused at parse time, naming the
// step and the field. (No gate has a required or enum-valued field:
// agent_name defaults to default-agent.)
func TestBadInput(t *testing.T) {
	infos := a2agates.Infos()
	if len(infos) != 10 {
		t.Fatalf("%d gates", len(infos))
	}
	for _, i := range infos {
		for js, want := range map[string]string{
			`[{"id":"g","type":"` + i.Type + `","agent_name":7}]`:        `step 1 (id "g"): field "agent_name": must be a string, got a number`,
			`[{"id":"g","type":"` + i.Type + `","timeout_seconds":"x"}]`: `step 1 (id "g"): field "timeout_seconds": must be a number`,
			`[{"id":"g","type":"` + i.Type + `","timeout_seconds":-1}]`:  `step 1 (id "g"): field "timeout_seconds": must not be negative`,
			`[{"id":"g","type":"` + i.Type + `","bogus":1}]`:             `"bogus"`,
		} {
			_, err := runner.ParseSteps(steps.Builtin(), []byte(js))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s:\n got %v\nwant %s", js, err, want)
			}
		}
		if _, err := runner.ParseSteps(steps.Builtin(), []byte(`[{"id":"g","type":"`+i.Type+`"}]`)); err != nil {
			t.Errorf("%s with defaults: %v", i.Type, err)
		}
	}
}
