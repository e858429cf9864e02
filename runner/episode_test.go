package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundle"
	"github.com/agentenv/agentenv/runner/bundles"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	envsteptest.Cleanup()
	os.Exit(code)
}

// q3Email materialises the q3-email bundle into the fixture's stores and
// runs it once with its scripted agent; it returns the stored task id and
// the scores of that run by step id (what `agent-env run q3-email`
// reports).
func q3Email(t *testing.T, f *envsteptest.Fixture) (string, map[string]float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	b, err := bundle.Locate("q3-email", bundles.FS())
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	m, err := bundle.Materialise(ctx, b, bundle.Stores{Documents: f.Services.Documents, Artifacts: f.Services.Artifacts,
		LockDir: t.TempDir()}, f.Runner.Steps(), &out, nil)
	if err != nil {
		t.Fatalf("materialise: %v\n%s", err, out.String())
	}
	rep, err := bundle.Run(ctx, f.Runner, f.Services, m, &bundle.RunOptions{Sandbox: "process", Out: &out, Documents: f.Services.Documents})
	if err != nil || rep.Failed() {
		t.Fatalf("scripted run: %v\n%s", err, out.String())
	}
	scores := map[string]float64{}
	for _, s := range rep.Runs[0].Scores {
		scores[s.StepID] = s.Score
	}
	return m.Tasks[0].Entity.ID, scores
}

// onProcess is the initial context of an episode on the process sandbox.
var onProcess = map[string]any{"metadata": map[string]any{"user_overrides": map[string]any{
	"env_sandbox": "process", "agent_sandbox": "process", "sandbox": "process"}}}

func episodeSpec(t *testing.T, f *envsteptest.Fixture, id string, o *runner.EpisodeOptions) *runner.EpisodeSpec {
	t.Helper()
	if o == nil {
		o = &runner.EpisodeOptions{}
	}
	o.Documents = f.Services.Documents
	o.Context = onProcess
	spec, err := f.Runner.LoadEpisodeSpec(context.Background(), f.Services.Documents, registry.Ref{ID: id}, f.Services, o)
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	return spec
}

// The calls and reply of q3-email's script.
var q3Calls = []struct {
	tool string
	args json.RawMessage
}{
	{"email_search", json.RawMessage(`{"query":"Q3"}`)},
	{"email_read_message", json.RawMessage(`{"id":"m1"}`)},
	{"email_send_message", json.RawMessage(`{"to":["alice@example.com"],"subject":"Re: Q3 report","body":"Hi Alice, yes: the Q3 numbers in the report are final."}`)},
}

const q3Reply = "I read Alice's message and replied to confirm the Q3 numbers are final."

// playQ3 plays the turn like the script: the same calls, the same reply.
func playQ3(ctx context.Context, t *testing.T, turn *runner.Turn) {
	t.Helper()
	tools, err := turn.Tools(ctx)
	if err != nil {
		t.Fatalf("tools: %v", err)
	}
	list, err := tools.ListTools(ctx)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	if !slices.ContainsFunc(list, func(x agentsdk.Tool) bool { return x.Name == "email_send_message" }) {
		t.Fatalf("email_send_message not among %d tools", len(list))
	}
	for _, c := range q3Calls {
		res, err := tools.CallTool(ctx, c.tool, c.args)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", c.tool, err, res)
		}
	}
	if err := turn.End(ctx, q3Reply); err != nil {
		t.Fatalf("end: %v", err)
	}
}

// envInstancesTornDown checks that every env the run deployed is torn
// down (its instance record says so).
func envInstancesTornDown(t *testing.T, f *envsteptest.Fixture, snap map[string]any) {
	t.Helper()
	envs, _ := snap[runner.KeyDeployedEnvs].([]any)
	if len(envs) == 0 {
		t.Fatal("the run deployed no env")
	}
	for _, e := range envs {
		id, _ := e.(map[string]any)["instance_id"].(string)
		inst, err := f.Services.Deployer.GetInstance(context.Background(), id)
		if err != nil {
			t.Fatalf("env instance %s: %v", id, err)
		}
		if inst.Status == "deployed" {
			t.Errorf("env instance %s is still deployed after the episode", id)
		}
	}
}

// TestEpisodes shares one fixture (stores, built env, gateway and agent)
// and one scripted run of q3-email among the episode tests.
func TestEpisodes(t *testing.T) {
	f := envsteptest.New(t)
	taskID, want := q3Email(t, f)
	if want["outcome"] != 1 || want["reply"] != 1 {
		t.Fatalf("scripted scores = %v, want 1 and 1", want)
	}
	t.Run("PlaysQ3EmailAssistantLikeTheScriptedAgent", func(t *testing.T) { testPlaysQ3Email(t, f, taskID, want) })
	t.Run("ServerOverHTTP", func(t *testing.T) { testServerOverHTTP(t, f, taskID, want) })
	t.Run("ServerClientDisappears", func(t *testing.T) { testServerClientDisappears(t, f, taskID) })
	t.Run("TurnTimeout", func(t *testing.T) { testTurnTimeout(t, f, taskID) })
}

// testPlaysQ3Email plays the assistant of q3-email from outside: the same
// calls as the script through Turn.Tools, the same reply; the scores equal
// the scripted run's.
func testPlaysQ3Email(t *testing.T, f *envsteptest.Fixture, taskID string, want map[string]float64) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	spec := episodeSpec(t, f, taskID, nil)
	ep, err := spec.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := ep.NextTurn(ctx)
	if err != nil || turn == nil {
		t.Fatalf("first turn: %v %v", turn, err)
	}
	if turn.AgentName != "default-agent" || turn.PromptID != "q3" || turn.StepID != "prompt" ||
		turn.Prompt != "Read Alice's message about the Q3 report and reply to her." || turn.Role != "assistant" {
		t.Errorf("turn = %+v", turn)
	}
	playQ3(ctx, t, turn)
	if err := turn.End(ctx, "again"); !errors.Is(err, runner.ErrTurnEnded) {
		t.Errorf("second End: err = %v, want ErrTurnEnded", err)
	}
	if next, err := ep.NextTurn(ctx); next != nil || err != nil {
		t.Fatalf("after the last turn: %v %v", next, err)
	}
	got, err := ep.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != runner.StatusCompleted || len(got.Scores) != len(want) {
		t.Fatalf("result = %+v, scripted %v", got, want)
	}
	for step, s := range want {
		if got.Scores[step] != s {
			t.Errorf("score %s = %v, scripted run %v", step, got.Scores[step], s)
		}
	}
	// Each verification carries the rows that explain its score.
	for _, v := range got.Verifications {
		if len(v.Results) == 0 {
			t.Errorf("verification %s has no rows", v.VerifierID)
		}
		for _, row := range v.Results {
			if row["justification"] == nil || row["result"] == nil {
				t.Errorf("verification %s row %v lacks result or justification", v.VerifierID, row)
			}
		}
	}

	// The run record holds the trainer's tool calls: in the prompt
	// response and in the stored trajectory.
	inst, err := runner.GetInstance(ctx, f.Services.Documents, ep.InstanceID())
	if err != nil || inst.Status != runner.StatusCompleted {
		t.Fatalf("instance: %v %+v", err, inst)
	}
	prs, _ := inst.Context[runner.KeyPromptResponses].([]any)
	if len(prs) != 1 {
		t.Fatalf("prompt responses = %v", prs)
	}
	pr := prs[0].(map[string]any)
	if pr["tool_call_count"] != float64(len(q3Calls)) || pr["response"] != q3Reply {
		t.Errorf("prompt response = %v", pr)
	}
	url, _ := pr["agent_trajectory_object_url"].(string)
	key, err := f.Services.Objects.KeyOf(url)
	if err != nil {
		t.Fatalf("trajectory url %q: %v", url, err)
	}
	rd, _, err := f.Services.Objects.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	traj, _ := io.ReadAll(rd)
	rd.Close()
	for _, c := range q3Calls {
		if !strings.Contains(string(traj), `"`+c.tool+`"`) {
			t.Errorf("stored trajectory lacks the %s call: %s", c.tool, traj)
		}
	}
	envInstancesTornDown(t, f, inst.Context)
}
