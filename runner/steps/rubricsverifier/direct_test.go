package rubricsverifier_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/internal/fakemodel"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

func asJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// services are real stores in a temporary folder holding a stored
// trajectory and a collected universe, and the initial context of a run
// whose prompt p1 has them.
func services(t *testing.T) (*runner.Services, map[string]any) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	docs, err := sqlite.Open(ctx, filepath.Join(dir, "docs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docs.Close() })
	objs, err := fsobject.New(filepath.Join(dir, "objects"), nil)
	if err != nil {
		t.Fatal(err)
	}
	arts := artifact.New(docs, objs, nil)
	traj := `[{"type":"model_call","turn":1,"secret_plan":"hidden step"},{"type":"tool_call","name":"write_file","arguments":"answer.txt"},{"type":"final","text":"Wrote it."}]`
	if _, err := objs.Put(ctx, "prompt_agent_trajectories/prompt_id=p1/trajectory.json", strings.NewReader(traj), nil); err != nil {
		t.Fatal(err)
	}
	f, err := arts.PutFile(ctx, "answer-file", artifact.FileInput{Filename: "answer.txt", Body: strings.NewReader("sum=5\n")})
	if err != nil {
		t.Fatal(err)
	}
	u, err := arts.PutUniverse(ctx, "collected", map[string]registry.Ref{"solution/answer.txt": f.Ref()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	initial := map[string]any{
		"prompt_responses": []any{map[string]any{"prompt_id": "p1", "prompt_text": "Add 2 and 3 into answer.txt", "response": "Wrote it.",
			"agent_trajectory_object_url": objs.URL("prompt_agent_trajectories/prompt_id=p1/trajectory.json")}},
		"metadata": map[string]any{"collected_artifacts": map[string]any{"collect": map[string]any{"id": u.ID, "version": u.Version,
			"files": []string{"solution/answer.txt"}}}, "expected_sum": 5},
	}
	return &runner.Services{Documents: docs, Objects: objs, Artifacts: arts}, initial
}

func run(t *testing.T, s *runner.Services, initial map[string]any, stepJSON string) (*runner.RunContext, error) {
	t.Helper()
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	task, err := r.ParseTask("t", 1, []byte("["+stepJSON+"]"))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	rc := runner.NewRunContext(initial, s)
	_, err = r.Run(context.Background(), task, rc, nil)
	return rc, err
}

// The direct judge with every output format: it is sent the work (the
// filtered trajectory, the collected files, the facts) and the format's
// instructions, and its grade becomes the rows and score.
func TestDirectJudgeFormats(t *testing.T) {
	s, initial := services(t)
	for _, tc := range []struct {
		format, answer string
		score          float64
		sys            string // what the format's instructions ask for
	}{
		{"rubric_binary", `{"results":[{"id":"file","result":true,"justification":"answer.txt holds sum=5"},{"id":"said","result":false,"justification":"terse"}]}`, 0.75, `"result":true|false`},
		{"rubric_partial", `{"results":[{"id":"file","score":1,"justification":"ok"},{"id":"said","score":0.5,"justification":"half"}]}`, 0.875, `"score":<number from 0 to 1>`},
		{"trajectory_mistakes", `{"mistakes":[{"id":"said","step":3,"description":"no explanation"}],"summary":"one"}`, 0.75, `{"mistakes":[`},
		{"rubric_evidence", `{"results":[{"id":"file","result":true,"evidence":["sum=5"],"justification":"ok"},{"id":"said","result":true,"evidence":["Wrote it."],"justification":"ok"}]}`, 1, `"evidence":["<quote>"]`},
	} {
		m := fakemodel.New([]fakemodel.Reply{{Text: "Grades:\n" + tc.answer}}, nil)
		initial["metadata"].(map[string]any)["user_overrides"] = map[string]any{"judge_litellm_base_url": m.URL(), "judge_litellm_api_key": "sk-judge"}
		rc, err := run(t, s, initial, `{"id":"judge","type":"rubrics_verifier","prompt_id":"p1","verifier_id":"v","output_format":"`+tc.format+`",
		 "score_aggregator":"weighted_average","criteria":[{"id":"file","criterion":"answer.txt holds the sum","weight":3},{"id":"said","criterion":"The reply explains"}],
		 "trajectory_filter":{"exclude_event_types":["model_call"]},"context_facts_for_judge":{"expected sum":"metadata.expected_sum","first prompt":"prompt_responses.0.prompt_id"},
		 "grading_policy_prompt":"Be strict."}`)
		m.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		v, err := rc.Verification("v")
		if err != nil || v.Score != tc.score || len(v.Results) != 2 {
			t.Errorf("%s: verification %s %v, want score %g", tc.format, asJSON(v), err, tc.score)
		}
		reqs := m.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%s: %d judge calls", tc.format, len(reqs))
		}
		sys, user := reqs[0].Messages[0].Content, reqs[0].Messages[1].Content
		for _, want := range []string{"write_file", "--- solution/answer.txt ---\nsum=5", "- expected sum: 5", `- first prompt: "p1"`, "- file: answer.txt holds the sum"} {
			if !strings.Contains(user, want) {
				t.Errorf("%s: the judge was not sent %q:\n%s", tc.format, want, user)
			}
		}
		if strings.Contains(user, "hidden step") {
			t.Errorf("%s: the filtered-out event reached the judge", tc.format)
		}
		if !strings.Contains(sys, "Be strict.") || !strings.Contains(sys, tc.sys) {
			t.Errorf("%s: system prompt %q", tc.format, sys)
		}
		if strings.Contains(asJSON(rc.SafeSnapshot()), "sk-judge") {
			t.Errorf("%s: the judge key leaked into the safe context", tc.format)
		}
	}
}

// --no-trajectory-filter (apply_trajectory_filter false) sends the whole
// trajectory; a malformed grade scores 0 with rows saying why, and the
// step does not fail.
func TestDirectJudgeNoFilterAndMalformed(t *testing.T) {
	s, initial := services(t)
	m := fakemodel.New([]fakemodel.Reply{{Text: "All good, I think."}}, nil)
	defer m.Close()
	initial["metadata"].(map[string]any)["user_overrides"] = map[string]any{"judge_litellm_base_url": m.URL(), "apply_trajectory_filter": false}
	rc, err := run(t, s, initial, `{"id":"judge","type":"rubrics_verifier","prompt_id":"p1","verifier_id":"v","output_format":"rubric_partial",
	 "criteria":[{"id":"file","criterion":"answer.txt holds the sum"}],"trajectory_filter":{"exclude_event_types":["model_call"]}}`)
	if err != nil {
		t.Fatal(err)
	}
	if user := m.Requests()[0].Messages[1].Content; !strings.Contains(user, "hidden step") {
		t.Errorf("the filter was applied although the run turned it off")
	}
	v, _ := rc.Verification("v")
	if v.Score != 0 || len(v.Results) != 1 || !strings.Contains(asJSON(v.Results[0]["justification"]), `no JSON object with \"results\"`) {
		t.Errorf("malformed grade: %s", asJSON(v))
	}
}

// Bad input is refused when the task is parsed, naming the field.
func TestBadInput(t *testing.T) {
	const ok = `"prompt_id":"p","criteria":[{"id":"c","criterion":"ok"}]`
	for fields, field := range map[string]string{
		`"criteria":[{"id":"c","criterion":"ok"}]`:                      "prompt_id",
		`"prompt_id":"p"`:                                               "criteria",
		`"prompt_id":"p","criteria":"all of them"`:                      "criteria",
		`"prompt_id":"p","criteria":[{"id":"c"}]`:                       "criteria",
		ok + `,"output_format":"likert"`:                                "output_format",
		ok + `,"output_format":3`:                                       "output_format",
		ok + `,"use_agent_judge":"yes"`:                                 "use_agent_judge",
		ok + `,"trajectory_filter":{"rolez":["agent"]}`:                 "trajectory_filter",
		ok + `,"trajectory_filter":{"roles":"agent"}`:                   "trajectory_filter.roles",
		ok + `,"trajectory_filter":{"last_n_events":-1}`:                "trajectory_filter",
		ok + `,"trajectory_filter":["agent"]`:                           "trajectory_filter",
		ok + `,"context_facts_for_judge":["metadata.x"]`:                "context_facts_for_judge",
		ok + `,"context_facts_for_judge":{"x":""}`:                      "context_facts_for_judge",
		ok + `,"judge_timeout_seconds":0`:                               "judge_timeout_seconds",
		ok + `,"judge_timeout_seconds":"soon"`:                          "judge_timeout_seconds",
		ok + `,"judge_a2a_agent_id":"judge"`:                            "judge_a2a_agent_id",
		ok + `,"use_agent_judge":false,"judge_sandbox_type":"docker"`:   "judge_sandbox_type",
		ok + `,"judge_priority":1`:                                      "judge_priority",
		ok + `,"effort":"high"`:                                         "effort",
		ok + `,"max_thinking_tokens":1000`:                              "max_thinking_tokens",
		ok + `,"use_agent_judge":true,"max_thinking_tokens":-1`:         "max_thinking_tokens",
		ok + `,"agent_name":"a"`:                                        "agent_name",
		ok + `,"use_agent_judge":true,"judge_a2a_agent_id":7`:           "judge_a2a_agent_id",
		ok + `,"use_agent_judge":true,"judge_timeout_seconds":-5`:       "judge_timeout_seconds",
		ok + `,"use_agent_judge":true,"output_format":"rubric_binaryy"`: "output_format",
	} {
		_, err := runner.ParseSteps(steps.Builtin(), []byte(`[{"id":"j","type":"rubrics_verifier",`+fields+`}]`))
		var se *runner.StepError
		if !errors.As(err, &se) || se.Field != field || !strings.Contains(err.Error(), `step 1 (id "j")`) {
			t.Errorf("%s: got %v, want an error naming the step and field %q", fields, err, field)
		}
	}
	for _, fields := range []string{
		ok + `,"use_agent_judge":false`,
		ok + `,"use_agent_judge":true,"judge_a2a_agent_id":"judge","judge_sandbox_type":"process","judge_priority":2,"effort":"high","max_thinking_tokens":100,"output_format":"rubric_evidence"`,
		ok + `,"trajectory_filter":{"event_types":["final"],"roles":["assistant"],"drop_fields":["raw"],"max_string_chars":100,"last_n_events":5,"exclude_event_types":["model_call"]}`,
	} {
		if _, err := runner.ParseSteps(steps.Builtin(), []byte(`[{"id":"j","type":"rubrics_verifier",`+fields+`}]`)); err != nil {
			t.Errorf("%s: %v", fields, err)
		}
	}
}
