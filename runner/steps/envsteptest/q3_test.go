package envsteptest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	envsteptest.Cleanup()
	os.Exit(code)
}

const inbox = `{"messages":[{"id":"m1","folder":"inbox","from":"alice@example.com","to":["me@example.com"],
  "subject":"Q3 report","body":"Can you confirm the Q3 numbers?","sent_at":"2026-03-02T09:00:00Z"}]}`

// q3Task deploys the email env, loads the inbox, deploys the scripted
// agent bound to it, prompts it and grades the sent mail.
const q3Task = `[
 {"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
 {"id":"load","type":"load_artifact","env_id":"email","artifact_id":"inbox"},
 {"id":"agent","type":"deploy_agent","a2a_agent_id":"scripted","env_ids":["email"],"role":"assistant",
  "agent_config":{"script":{"rules":[{"when":{"contains":"Alice"},
    "steps":[{"tool":"email_read_message","arguments":{"id":"m1"}},
             {"tool":"email_send_message","arguments":{"to":["alice@example.com"],"subject":"Re: Q3 report","body":"Confirmed: the Q3 numbers are final."}}],
    "reply":"Replied to Alice."}]}}},
 {"id":"prompt","type":"prompt_agent","prompt_id":"p1","prompt":"Read Alice's message and reply to it.","poll_interval_seconds":0.05},
 {"id":"outcome","type":"env_outcome_verifier","env_id":"email","verifier_id":"sent","prompt_id":"p1","checks":[
   {"id":"reply_to_alice","data":"email","extract":{"path":"messages","match":{"folder":{"equals":"sent"},"subject":{"regex":"^Re: Q3"}},"take":"to"},"predicate":{"regex":"alice@example.com"}},
   {"id":"inbox_read","data":"email","extract":{"path":"messages","match":{"id":{"equals":"m1"}},"take":"read"},"predicate":{"equals":true}},
   {"id":"listed","tool":"email_list_messages","args":{"folder":"sent"},"extract":"messages[0].subject","predicate":{"regex":"Q3"}}]},
 {"id":"said","type":"agent_prompt_response_verifier","prompt_id":"p1","verifier_id":"said","criteria":[{"type":"response_contains","needles":["Alice"]}]}
]`

func TestQ3EmailEndToEnd(t *testing.T) {
	f := envsteptest.New(t)
	f.PutInbox(t, "inbox", inbox)
	rc, _, err := f.Run(t, q3Task, map[string]any{"metadata": map[string]any{"instance_id": "q3-test"}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, id := range []string{"sent", "said"} {
		v, err := rc.Verification(id)
		if err != nil || v.Score != 1 {
			b, _ := json.Marshal(v)
			t.Errorf("verification %s: %s %v", id, b, err)
		}
	}
	pr, err := rc.PromptResponseEntry("p1")
	if err != nil {
		t.Fatal(err)
	}
	if pr["response"] != "Replied to Alice." || pr["error_type"] != nil {
		t.Errorf("prompt response %v", pr)
	}
	if n, _ := pr["tool_call_count"].(float64); n != 2 {
		t.Errorf("tool_call_count %v, want 2", pr["tool_call_count"])
	}
	// The trajectory is readable from the object store.
	u, _ := pr["agent_trajectory_object_url"].(string)
	key, err := f.Services.Objects.KeyOf(u)
	if err != nil {
		t.Fatalf("trajectory url %q: %v", u, err)
	}
	r, _, err := f.Services.Objects.Open(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	traj, _ := io.ReadAll(r)
	r.Close()
	if !strings.Contains(string(traj), "email_send_message") {
		t.Errorf("trajectory %s", traj)
	}
	loaded, _ := rc.Metadata("loaded_environment_artifacts")
	if l, _ := loaded.([]any); len(l) != 1 {
		t.Errorf("loaded_environment_artifacts %v", loaded)
	}
	a, err := rc.AgentEntry(runner.DefaultAgentName)
	if err != nil || a["role"] != "assistant" || a["a2a_card"] == nil {
		t.Errorf("agent entry %v %v", a, err)
	}
	e, err := rc.EnvEntry("email", "")
	if err != nil || e["gateway_url"] == "" || e["environment_card"] == nil {
		t.Errorf("env entry %v %v", e, err)
	}
	n, err := f.Runner.TeardownRun(context.Background(), rc, 0)
	if err != nil || n != 2 {
		t.Errorf("teardown: %d %v, want 2 (env and agent)", n, err)
	}
	gw, _ := e["gateway_url"].(string)
	if resp, err := http.Get(gw + "/.well-known/agent-env.json"); err == nil {
		resp.Body.Close()
		t.Errorf("gateway still answers after teardown")
	}
}

func TestLoadIntoEnvErrors(t *testing.T) {
	f := envsteptest.New(t)
	f.PutInbox(t, "broken", `{"messages": not json`)
	// An artifact for a server the env does not have is skipped and reported.
	if _, err := f.Services.Artifacts.PutEnvironment(context.Background(), "calendar-seed", envInput("calendar")); err != nil {
		t.Fatal(err)
	}
	rc, _, err := f.Run(t, `[
	 {"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"skip","type":"load_artifact","env_id":"email","artifact_id":"calendar-seed"},
	 {"id":"bad","type":"load_artifact","env_id":"email","artifact_id":"broken"}]`, nil)
	if err == nil || !strings.Contains(err.Error(), "server email refused data/add of part 0") || !strings.Contains(err.Error(), "inbox.json") {
		t.Fatalf("refused data/add: %v", err)
	}
	loaded, _ := rc.Metadata("loaded_environment_artifacts")
	l, _ := loaded.([]any)
	if len(l) != 1 || l[0].(map[string]any)["skipped"] != true || !strings.Contains(l[0].(map[string]any)["reason"].(string), `"calendar"`) {
		t.Errorf("skipped artifact not reported: %v", loaded)
	}
}

// TestPromptTimeout: an agent that never finishes times out with a
// recorded error; with fail_task_on_error=false the run goes on, and a
// verifier over that prompt (and one over a missing prompt) scores 0 with
// a row saying why.
func TestPromptTimeout(t *testing.T) {
	f := envsteptest.New(t)
	hung := hungAgent(t)
	rc, res, err := f.Run(t, `[
	 {"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"prompt","type":"prompt_agent","agent_name":"hung","prompt_id":"p1","prompt":"hello","timeout_seconds":0.3,"poll_interval_seconds":0.05,"fail_task_on_error":false},
	 {"id":"v1","type":"env_outcome_verifier","env_id":"email","verifier_id":"v1","prompt_id":"p1","checks":[{"data":"email","predicate":{"exists":true}}]},
	 {"id":"v2","type":"env_outcome_verifier","env_id":"email","verifier_id":"v2","prompt_id":"nope","checks":[{"data":"email","predicate":{"exists":true}}]},
	 {"id":"v3","type":"agent_prompt_response_verifier","verifier_id":"v3","prompt_id":"nope","criteria":[{"type":"response_contains","needles":["x"]}]}
	]`, map[string]any{"deployed_agents": []any{map[string]any{"agent_name": "hung", "api_url": hung.URL}}})
	if err != nil {
		t.Fatalf("run should continue past a tolerated timeout: %v", err)
	}
	_ = res
	pr, err := rc.PromptResponseEntry("p1")
	if err != nil || pr["error_code"] != "agent_timeout" || !strings.Contains(pr["error_message"].(string), "did not finish") {
		t.Fatalf("timeout not recorded: %v %v", pr, err)
	}
	if !hung.canceled() {
		t.Errorf("no tasks/cancel after the timeout")
	}
	v1, _ := rc.Verification("v1")
	if v1.Score != 0 || len(v1.Results) != 1 || v1.Results[0]["id"] != "prompt_error" {
		t.Errorf("v1 %+v", v1)
	}
	v2, _ := rc.Verification("v2")
	if v2.Score != 0 || len(v2.Results) != 1 || !strings.Contains(v2.Results[0]["message"].(string), `"nope"`) {
		t.Errorf("v2 %+v", v2)
	}
	v3, _ := rc.Verification("v3")
	if v3.Score != 0 || len(v3.Results) != 1 || v3.Results[0]["id"] != "missing_prompt" {
		t.Errorf("v3 %+v", v3)
	}
	failed, _ := rc.Metadata("failed_steps")
	if l, _ := failed.([]any); len(l) != 1 {
		t.Errorf("failed_steps %v", failed)
	}
	// The same timeout with fail_task_on_error (the default) fails the run.
	_, _, err = f.Run(t, `[{"id":"prompt","type":"prompt_agent","agent_name":"hung","prompt":"hello","timeout_seconds":0.2,"poll_interval_seconds":0.05}]`,
		map[string]any{"deployed_agents": []any{map[string]any{"agent_name": "hung", "api_url": hung.URL}}})
	if err == nil || !strings.Contains(err.Error(), "did not finish in time") {
		t.Errorf("fatal timeout: %v", err)
	}
}
