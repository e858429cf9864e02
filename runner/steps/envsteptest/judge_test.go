package envsteptest_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/internal/fakemodel"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundle"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/examplecatalog"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// judgeTornDown reads metadata.judge_agents[id] and checks the judge agent
// is torn down.
// withJudge is the fixture with the toolcaller judge registered: built
// from source once, outside the runs' deadlines (slow on a loaded machine).
func withJudge(t *testing.T) *envsteptest.Fixture {
	t.Helper()
	f := envsteptest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := examplecatalog.EnsureAgent(ctx, f.Services.Deployer, "toolcaller"); err != nil {
		t.Fatal(err)
	}
	return f
}

func judgeTornDown(t *testing.T, f *envsteptest.Fixture, rc *runner.RunContext, id string) map[string]any {
	t.Helper()
	v, _ := rc.Metadata("judge_agents")
	m, _ := v.(map[string]any)
	rec, _ := m[id].(map[string]any)
	inst, _ := rec["instance_id"].(string)
	if inst == "" {
		t.Fatalf("no judge agent recorded for %s: %v", id, v)
	}
	ai, err := f.Services.Deployer.GetAgentInstance(context.Background(), inst)
	if err != nil || ai.Status != envdeploy.StatusTornDown {
		t.Errorf("judge agent %s: %+v %v, want torn down", inst, ai, err)
	}
	return rec
}

// The agent judge end to end: a file is collected from a sandbox, the
// scripted agent answers the prompt, and the toolcaller (on the fake model)
// is deployed as the judge, loaded with the work, and grades it with
// evidence; the rows and score are stored, the judge's trajectory kept and
// the judge torn down.
func TestAgentJudge(t *testing.T) {
	f := withJudge(t)
	ctx := context.Background()
	if _, err := f.Services.Artifacts.PutFile(ctx, "judged-answer", artifact.FileInput{Filename: "answer.txt", Body: strings.NewReader("sum=5\n")}); err != nil {
		t.Fatal(err)
	}
	m := fakemodel.New([]fakemodel.Reply{{Text: `{"results":[{"id":"sum","result":true,"evidence":["answer.txt: sum=5"],"justification":"right"},` +
		`{"id":"explained","result":true,"evidence":[],"justification":"it says so"}]}`}}, nil)
	t.Cleanup(m.Close)
	rc, _, err := f.Run(t, `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm","sandbox_type":"local"},
	 {"id":"load","type":"load_artifact","sandbox_name":"box","artifact_id":"judged-answer","destination_path":"/app/artifact"},
	 {"id":"collect","type":"collect_artifacts","sandbox_name":"box"},
	 {"id":"agent","type":"deploy_agent","a2a_agent_id":"scripted","agent_config":{"script":{"default":{"reply":"The sum of 2 and 3 is 5."}}}},
	 {"id":"p","type":"prompt_agent","prompt_id":"p1","prompt":"Add 2 and 3 into answer.txt","poll_interval_seconds":0.05},
	 {"id":"judge","type":"rubrics_verifier","prompt_id":"p1","verifier_id":"graded","use_agent_judge":true,"judge_a2a_agent_id":"toolcaller",
	  "output_format":"rubric_evidence","score_aggregator":"weighted_average","judge_timeout_seconds":120,"grading_policy_prompt":"Quote the file.",
	  "context_facts_for_judge":{"expected":"metadata.expected_sum"},"trajectory_filter":{"last_n_events":10},
	  "criteria":[{"id":"sum","criterion":"answer.txt holds the sum","weight":3},{"id":"explained","criterion":"The reply explains"}]}]`,
		map[string]any{"metadata": map[string]any{"expected_sum": 5,
			"user_overrides": map[string]any{"judge_litellm_base_url": m.URL(), "judge_litellm_api_key": "sk-judge"}}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := rc.Verification("graded")
	if err != nil || v.Score != 0.75 || len(v.Results) != 2 || asJSON(v.Results[0]["evidence"]) != `["answer.txt: sum=5"]` ||
		!strings.HasPrefix(v.Results[1]["justification"].(string), "the judge cited no evidence") {
		t.Errorf("verification %s %v", asJSON(v), err)
	}
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("judge model calls: %d", len(reqs))
	}
	all := asJSON(reqs[0].Messages)
	for _, want := range []string{"Quote the file.", `\"evidence\":[\"\u003cquote\u003e\"]`, "sum=5", "The sum of 2 and 3 is 5.", "- expected: 5", "answer.txt holds the sum"} {
		if !strings.Contains(all, want) {
			t.Errorf("the judge's model was not sent %q:\n%s", want, all)
		}
	}
	if reqs[0].Header.Get("Authorization") != "Bearer sk-judge" {
		t.Errorf("the judge agent did not get the judge key")
	}
	rec := judgeTornDown(t, f, rc, "graded")
	if rec["a2a_state"] != "completed" || !strings.Contains(asJSON(rec["trajectory_object_url"]), "judge_trajectories/") {
		t.Errorf("judge record %v", rec)
	}
	if strings.Contains(asJSON(rc.SafeSnapshot()), "sk-judge") {
		t.Errorf("the judge key leaked into the safe context")
	}
}

// A judge that answers with no readable grade scores 0 with rows saying
// why; one that cannot work (its model failing, no answer in time) fails
// the step. The judge agent is torn down on every path.
func TestAgentJudgeFailures(t *testing.T) {
	f := withJudge(t)
	pr := map[string]any{"prompt_id": "p1", "prompt_text": "Add 2 and 3", "response": "5"}
	for _, tc := range []struct {
		name, format string
		replies      []fakemodel.Reply
		timeout      string
		stepErr      string // "" = the step passes with score 0
		row          string
	}{
		{"not json", "rubric_binary", []fakemodel.Reply{{Text: "Looks fine to me."}}, "60", "", "invalid_structured_output"},
		{"wrong shape", "rubric_partial", []fakemodel.Reply{{Text: `{"results":[{"id":"sum","score":"high"}]}`}}, "60", "",
			"criterion sum: score must be a number from 0 to 1"},
		{"model down", "trajectory_mistakes", []fakemodel.Reply{{Status: 500}, {Status: 500}, {Status: 500}}, "60", "provider_error", ""},
		{"timeout", "rubric_evidence", []fakemodel.Reply{{Hang: true}}, "1.5", "judge_timeout_seconds", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fakemodel.New(tc.replies, nil)
			defer m.Close()
			rc, _, err := f.Run(t, `[{"id":"judge","type":"rubrics_verifier","prompt_id":"p1","verifier_id":"v","use_agent_judge":true,
			 "output_format":"`+tc.format+`","judge_timeout_seconds":`+tc.timeout+`,"criteria":[{"id":"sum","criterion":"The answer is 5"}]}]`,
				map[string]any{"prompt_responses": []any{pr}, "metadata": map[string]any{
					"user_overrides": map[string]any{"judge_litellm_base_url": m.URL(), "judge_litellm_api_key": "k"}}})
			if tc.stepErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.stepErr) {
					t.Errorf("step error %v, want %q", err, tc.stepErr)
				}
			} else {
				v, verr := rc.Verification("v")
				if err != nil || verr != nil || v.Score != 0 || len(v.Results) != 1 || !strings.Contains(asJSON(v.Results[0]), tc.row) {
					t.Errorf("run %v; verification %s %v, want score 0 and a row saying %q", err, asJSON(v), verr, tc.row)
				}
			}
			judgeTornDown(t, f, rc, "v")
		})
	}
}

// The judged-task example bundle end to end with no model: the scripted
// agent's answer and trajectory are collected, the toolcaller judge (on
// the fake model, through LITELLM_BASE_URL as the README runs it) grades
// them, and the rows and score are stored.
func TestJudgedTaskBundle(t *testing.T) {
	f := withJudge(t)
	m := fakemodel.New([]fakemodel.Reply{{Text: `{"results":[{"id":"correct","result":true,"evidence":["2 + 3 = 5"],"justification":"the answer is 5"},` +
		`{"id":"checked","result":true,"evidence":["echo_echo {\"text\":\"2 + 3 = 5\"}"],"justification":"it called echo_echo"}]}`}}, nil)
	defer m.Close()
	t.Setenv("LITELLM_BASE_URL", m.URL())
	t.Setenv("LITELLM_API_KEY", "sk-fake")
	b, err := bundle.LoadDir(filepath.Join("..", "..", "..", "examples", "bundles", "judged-task"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	var out strings.Builder
	mat, err := bundle.Materialise(ctx, b, bundle.Stores{Documents: f.Services.Documents, Artifacts: f.Services.Artifacts, LockDir: t.TempDir()},
		f.Runner.Steps(), &out, nil)
	if err != nil {
		t.Fatalf("materialise: %v", err)
	}
	rep, err := bundle.Run(ctx, f.Runner, f.Services, mat, &bundle.RunOptions{Out: &out, Documents: f.Services.Documents})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Outcome != bundle.Passed {
		t.Fatalf("runs %+v\n%s", rep.Runs, out.String())
	}
	rc := rep.Contexts()[0]
	v, err := rc.Verification("judge")
	if err != nil || v.Score != 1 || len(v.Results) != 2 || asJSON(v.Results[0]["evidence"]) != `["2 + 3 = 5"]` {
		t.Errorf("judge verification %s %v", asJSON(v), err)
	}
	if reqs := m.Requests(); len(reqs) != 1 || !strings.Contains(asJSON(reqs[0].Messages), "echo_echo") {
		t.Errorf("the judge was not sent the agent's trajectory: %s", asJSON(reqs))
	}
	judgeTornDown(t, f, rc, "judge")
}
