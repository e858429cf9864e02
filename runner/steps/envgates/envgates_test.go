package envgates_test

import (
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
	"github.com/agentenv/agentenv/runner/steps/envgates"
)

// Bad fields of each gate are refused at parse time, naming the step and
// the field. (No gate has an enum-valued field.)
func TestBadInput(t *testing.T) {
	for _, typ := range []string{envgates.TypeEnvCard, envgates.TypeEnvCoreProtocol, envgates.TypeMCPToolSchema, envgates.TypeGateAggregator} {
		for js, want := range map[string]string{
			`[{"id":"g","type":"` + typ + `"}]`:                        `step 1 (id "g"): field "env_id": is required`,
			`[{"id":"g","type":"` + typ + `","env_id":7}]`:             `step 1 (id "g"): field "env_id": must be a string, got a number`,
			`[{"id":"g","type":"` + typ + `","env_id":"e","bogus":1}]`: `"bogus"`,
		} {
			_, err := runner.ParseSteps(steps.Builtin(), []byte(js))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s:\n got %v\nwant %s", js, err, want)
			}
		}
	}
	for js, want := range map[string]string{
		`[{"id":"g","type":"validation_gate_aggregator","env_id":"e","required_gates":"x"}]`:  `field "required_gates": must be a list`,
		`[{"id":"g","type":"validation_gate_aggregator","env_id":"e","required_gates":[""]}]`: `field "required_gates": entry 0 is empty`,
		`[{"id":"g","type":"validation_gate_aggregator","env_id":"e","required_gates":[1]}]`:  `field "required_gates": must be a string, got a number`,
	} {
		_, err := runner.ParseSteps(steps.Builtin(), []byte(js))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s", js, err, want)
		}
	}
}

// Each gate declares env_id as an env reference, so bundles can rewrite
// bare names and check the env exists.
func TestEntityRefs(t *testing.T) {
	for _, s := range []runner.EntityRefser{new(envgates.EnvCard), new(envgates.EnvCoreProtocol), new(envgates.MCPToolSchema), new(envgates.GateAggregator)} {
		refs := s.EntityRefs()
		if len(refs) != 1 || refs[0].Field != "env_id" || refs[0].Collection != "envs" {
			t.Errorf("%T: %+v", s, refs)
		}
	}
}
