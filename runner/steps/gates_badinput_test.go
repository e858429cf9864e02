package steps_test

import (
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

// The release gates added last refuse bad fields when the task is
// parsed, naming the step and the field: missing required fields, wrong
// types, out-of-range values, unknown fields. (None of them has an
// enum-valued field.)
func TestReleaseGatesBadInput(t *testing.T) {
	const rt = `"type":"verify_universe_load_export_roundtrip"`
	const cb = `"type":"combine_universe_verdicts"`
	for js, want := range map[string]string{
		// verify_spec_conformance
		`{"id":"g","type":"verify_spec_conformance"}`:                    `field "env_id": is required`,
		`{"id":"g","type":"verify_spec_conformance","env_id":1}`:         `field "env_id": must be a string, got a number`,
		`{"id":"g","type":"verify_spec_conformance","env_id":"e","x":1}`: `"x"`,
		// verify_mcp_env_assessment
		`{"id":"g","type":"verify_mcp_env_assessment","prompt_id":"p"}`:             `field "env_id": is required`,
		`{"id":"g","type":"verify_mcp_env_assessment","env_id":"e"}`:                `field "prompt_id": is required`,
		`{"id":"g","type":"verify_mcp_env_assessment","env_id":"e","prompt_id":[]}`: `field "prompt_id": must be a string, got a list`,
		// verify_universe_load_export_roundtrip
		`{"id":"g",` + rt + `,"universe_artifact_id":"u"}`:                                              `field "env_id": is required`,
		`{"id":"g",` + rt + `,"env_id":"e"}`:                                                            `field "universe_artifact_id": is required`,
		`{"id":"g",` + rt + `,"env_id":"e","universe_artifact_id":"u","universe_artifact_version":"2"}`: `field "universe_artifact_version": must be an integer, got a string`,
		`{"id":"g",` + rt + `,"env_id":"e","universe_artifact_id":"u","universe_artifact_version":-1}`:  `field "universe_artifact_version": must be >= 1`,
		`{"id":"g",` + rt + `,"env_id":"e","universe_artifact_id":"u","persist_result":"yes"}`:          `field "persist_result": must be a boolean, got a string`,
		`{"id":"g",` + rt + `,"env_id":"e","universe_artifact_id":"u","emit_file_artifact_universe":1}`: `field "emit_file_artifact_universe": must be a boolean, got a number`,
		// combine_universe_verdicts
		`{"id":"g",` + cb + `,"universe_artifact_id":"u","universe_artifact_version":1,"judge_verifier_id":"j"}`:                `field "env_id": is required`,
		`{"id":"g",` + cb + `,"env_id":"e","universe_artifact_version":1,"judge_verifier_id":"j"}`:                              `field "universe_artifact_id": is required`,
		`{"id":"g",` + cb + `,"env_id":"e","universe_artifact_id":"u","judge_verifier_id":"j"}`:                                 `field "universe_artifact_version": is required`,
		`{"id":"g",` + cb + `,"env_id":"e","universe_artifact_id":"u","universe_artifact_version":1}`:                           `field "judge_verifier_id": is required`,
		`{"id":"g",` + cb + `,"env_id":"e","universe_artifact_id":"u","universe_artifact_version":1.5,"judge_verifier_id":"j"}`: `field "universe_artifact_version": must be an integer`,
		// verify_a2a_install
		`{"id":"g","type":"verify_a2a_install"}`:                                           `field "a2a_agent_id": is required`,
		`{"id":"g","type":"verify_a2a_install","a2a_agent_id":"a","agent_name":3}`:         `field "agent_name": must be a string, got a number`,
		`{"id":"g","type":"verify_a2a_install","a2a_agent_id":"a","timeout_seconds":-1}`:   `field "timeout_seconds": must not be negative`,
		`{"id":"g","type":"verify_a2a_install","a2a_agent_id":"a","a2a_agent_version":-2}`: `field "a2a_agent_version": must be >= 1`,
		// verify_a2a_snapshot
		`{"id":"g","type":"verify_a2a_snapshot","rubric_verifier_id":"r","rubric_criterion_id":"c"}`:                   `field "a2a_agent_id": is required`,
		`{"id":"g","type":"verify_a2a_snapshot","a2a_agent_id":"a","rubric_criterion_id":"c"}`:                         `field "rubric_verifier_id": is required`,
		`{"id":"g","type":"verify_a2a_snapshot","a2a_agent_id":"a","rubric_verifier_id":"r"}`:                          `field "rubric_criterion_id": is required`,
		`{"id":"g","type":"verify_a2a_snapshot","a2a_agent_id":"a","rubric_verifier_id":"r","rubric_criterion_id":{}}`: `field "rubric_criterion_id": must be a string, got an object`,
	} {
		_, err := runner.ParseSteps(steps.Builtin(), []byte("["+js+"]"))
		if err == nil || !strings.Contains(err.Error(), `step 1 (id "g")`) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s", js, err, want)
		}
	}
}

// Each declares its entity references: the env, the universe artifact
// (with its version field) and the agent.
func TestReleaseGatesEntityRefs(t *testing.T) {
	for typ, want := range map[string]string{
		"verify_spec_conformance":               "env_id:envs",
		"verify_mcp_env_assessment":             "env_id:envs",
		"verify_universe_load_export_roundtrip": "env_id:envs universe_artifact_id:artifacts@universe_artifact_version",
		"combine_universe_verdicts":             "env_id:envs universe_artifact_id:artifacts@universe_artifact_version",
		"verify_a2a_install":                    "a2a_agent_id:a2a_agents@a2a_agent_version",
		"verify_a2a_snapshot":                   "a2a_agent_id:a2a_agents",
	} {
		info, err := steps.Builtin().Lookup(typ)
		if err != nil {
			t.Fatal(err)
		}
		refser, ok := info.New().(runner.EntityRefser)
		if !ok {
			t.Fatalf("%s declares no entity refs", typ)
		}
		var got []string
		for _, r := range refser.EntityRefs() {
			s := r.Field + ":" + r.Collection
			if r.VersionField != "" {
				s += "@" + r.VersionField
			}
			got = append(got, s)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: %v, want %s", typ, got, want)
		}
	}
}
