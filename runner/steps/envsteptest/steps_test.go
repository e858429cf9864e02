package envsteptest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox/process"

	"github.com/agentenv/agentenv/internal/fakemodel"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

const scriptedAssistant = `{"id":"agent","type":"deploy_agent","a2a_agent_id":"scripted","env_ids":["email"],"role":"assistant",
  "agent_config":{"script":{"default":{"steps":[{"tool":"email_send_message","arguments":{"to":["bob@example.com"],"subject":"Hi","body":"Hello Bob"}}],"reply":"Sent."}}}}`

// TestToolAccessSnapshotReset: modify_env_tool_access hides a tool for a
// role; snapshot_env exports the env as an environment universe; reset_env
// empties it; load_artifact of the snapshot restores it.
func TestToolAccessSnapshotReset(t *testing.T) {
	f := envsteptest.New(t)
	f.PutInbox(t, "inbox", inbox)
	rc, _, err := f.Run(t, `[
	 {"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"load","type":"load_artifact","env_id":"email","artifact_id":"inbox"},
	 {"id":"deny","type":"modify_env_tool_access","env_id":"email","action":"disable","role":"assistant","tools":["email_send_message"]},
	 {"id":"denied","type":"env_outcome_verifier","env_id":"email","verifier_id":"denied","checks":[
	   {"tool":"email_send_message","role":"assistant","args":{"to":["x@example.com"],"subject":"s","body":"b"},"expect_error":true,"predicate":{"regex":"disabled for role 'assistant'"}},
	   {"tool":"email_list_messages","role":"other","args":{"folder":"inbox"},"extract":"messages[0].id","predicate":{"equals":"m1"}}]},
	 {"id":"allow","type":"modify_env_tool_access","env_id":"email","action":"enable","role":"assistant","tools":"*"},
	 {"id":"snap","type":"snapshot_env","env_id":"email","snapshot_id":"snap-1"},
	 {"id":"reset","type":"reset_env","env_id":"email"},
	 {"id":"empty","type":"env_outcome_verifier","env_id":"email","verifier_id":"empty","checks":[
	   {"data":"email","extract":"messages","predicate":{"exists":false}}]},
	 {"id":"restore","type":"load_artifact","env_id":"email","artifact_id":"snap-1"},
	 {"id":"restored","type":"env_outcome_verifier","env_id":"email","verifier_id":"restored","checks":[
	   {"data":"email","extract":{"path":"messages","match":{"id":{"equals":"m1"}},"take":"subject"},"predicate":{"equals":"Q3 report"}}]}
	]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"denied", "empty", "restored"} {
		if v, _ := rc.Verification(id); v.Score != 1 {
			t.Errorf("%s: %+v", id, v)
		}
	}
	changes, _ := rc.Metadata("tool_access_changes")
	l, _ := changes.([]any)
	if len(l) != 2 || !strings.Contains(asJSON(l[0]), `"disabled":["email_send_message"]`) {
		t.Errorf("tool_access_changes %s", asJSON(changes))
	}
	snap, _ := rc.Metadata("env_snapshotted_universes")
	if !strings.Contains(asJSON(snap), `"snap":{"id":"snap-1","version":1}`) {
		t.Errorf("env_snapshotted_universes %s", asJSON(snap))
	}
	unis, _ := rc.Metadata("loaded_environment_universes")
	if !strings.Contains(asJSON(unis), `"id":"snap-1"`) {
		t.Errorf("loaded_environment_universes %s", asJSON(unis))
	}
}

// TestEnvStepErrors: the documented refusals of the env steps.
func TestEnvStepErrors(t *testing.T) {
	f := envsteptest.New(t)
	cases := []struct {
		name, steps, want string
	}{
		{"unknown env", `{"id":"x","type":"modify_env_tool_access","env_id":"nope","action":"disable","role":"r","tools":["a"]}`, `no env named "nope"`},
		{"executor without role", `{"id":"w","type":"deploy_agent","agent_name":"world","a2a_agent_id":"scripted","env_ids":["email"]},
		  {"id":"x","type":"register_env_triggers","env_id":"email","executor_agent_name":"world","triggers":[{"id":"a","when":{"type":"action","tool":"email_send_message"},"actions":[{"type":"nl","instruction":"hi"}]}]}`,
			"has no explicit role"},
		{"executor role watched", `{"id":"w","type":"deploy_agent","agent_name":"world","a2a_agent_id":"scripted","env_ids":["email"],"role":"default"},
		  {"id":"x","type":"register_env_triggers","env_id":"email","executor_agent_name":"world","triggers":[{"id":"a","when":{"type":"action","tool":"email_send_message"},"actions":[{"type":"nl","instruction":"hi"}]}]}`,
			`its role "default" is in watch_roles`},
		{"gateway refuses a trigger", `{"id":"x","type":"register_env_triggers","env_id":"email","triggers":[{"id":"a","when":{"type":"bogus"},"actions":[]}]}`, "HTTP 400"},
		{"unknown peer", scriptedAssistant + `,{"id":"p","type":"peer_agents","peerings":[{"source_agent_name":"default-agent","peer_agent_names":["ghost"]}]}`, `no agent named "ghost"`},
		{"unknown agent id", `{"id":"a","type":"deploy_agent","a2a_agent_id":"ghost-agent","env_ids":["email"]}`, "not found"},
		{"agent env not deployed", `{"id":"a","type":"deploy_agent","a2a_agent_id":"scripted","env_ids":["calendar"]}`, `no env named "calendar"`},
		{"duplicate env", `{"id":"again","type":"deploy_env","env_id":"email","ttl_seconds":600}`, "already"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},`+tc.steps+`]`, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// Validation errors name the field.
	for steps, want := range map[string]string{
		`[{"id":"c","type":"sync_env_clock","env_id":"email","virtual_time":"Monday"}]`:                                                  "virtual_time",
		`[{"id":"m","type":"modify_env_tool_access","env_id":"email","action":"hide","role":"r","tools":["a"]}]`:                         "action",
		`[{"id":"p","type":"peer_agents","peerings":[{"source_agent_name":"a","peer_agent_names":["a"]}]}]`:                              "lists itself",
		`[{"id":"v","type":"env_outcome_verifier","env_id":"email","checks":[{"tool":"t","data":"email","predicate":{"exists":true}}]}]`: "exactly one of tool or data",
		`[{"id":"r","type":"rubrics_verifier","prompt_id":"p","criteria":[{"id":"a","criterion":"x"},{"id":"a","criterion":"y"}]}]`:      "duplicate criterion",
		`[{"id":"q","type":"prompt_agent","prompt":"hi","parts":[{"kind":"text","text":"hi"}]}]`:                                         "exactly one of prompt or parts",
	} {
		if _, err := f.Runner.ParseTask("t", 1, []byte(steps)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", steps, err, want)
		}
	}
}

// TestRubricsVerifier: the judge (a fake OpenAI-compatible server) grades
// the reply and the trajectory it was sent.
func TestRubricsVerifier(t *testing.T) {
	f := envsteptest.New(t)
	m := fakemodel.New([]fakemodel.Reply{{Text: "Verdicts: " +
		`{"results":[{"id":"sent","result":true,"justification":"The trajectory shows email_send_message."},{"id":"polite","result":false,"justification":"No greeting."}]}`}}, nil)
	t.Cleanup(m.Close)
	rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},`+scriptedAssistant+`,
	 {"id":"p","type":"prompt_agent","prompt_id":"p1","prompt":"Say hi to Bob","poll_interval_seconds":0.05},
	 {"id":"judge","type":"rubrics_verifier","prompt_id":"p1","verifier_id":"rubric","score_aggregator":"weighted_average",
	  "criteria":[{"id":"sent","criterion":"The agent sent the mail","weight":3},{"id":"polite","criterion":"The reply greets Bob","weight":1},{"id":"extra","criterion":"Unanswered","weight":0}]},
	 {"id":"missing","type":"rubrics_verifier","prompt_id":"nope","verifier_id":"missing","criteria":[{"id":"a","criterion":"x"}]}
	]`, map[string]any{"metadata": map[string]any{"user_overrides": map[string]any{"judge_litellm_base_url": m.URL(), "judge_litellm_api_key": "sk-secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := rc.Verification("rubric")
	if v.Score != 0.75 || len(v.Results) != 3 || v.Results[2]["justification"] != "the judge gave no verdict for this criterion" {
		t.Errorf("rubric %s", asJSON(v))
	}
	reqs := m.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Messages[1].Content, "email_send_message") || reqs[0].Header.Get("Authorization") != "Bearer sk-secret" {
		t.Errorf("judge request %+v", reqs)
	}
	if strings.Contains(asJSON(rc.SafeSnapshot()), "sk-secret") {
		t.Errorf("the judge key leaked into the safe context")
	}
	mv, _ := rc.Verification("missing")
	if mv.Score != 0 || mv.Results[0]["id"] != "missing_prompt" {
		t.Errorf("missing %s", asJSON(mv))
	}
}

// TestRunOverrides: user_overrides (--a2a-agent-id, --env-sandbox,
// --agent-sandbox) and the run's agent_model (--agent-model) win over the
// step fields.
func TestRunOverrides(t *testing.T) {
	f := envsteptest.New(t)
	over := func(kv ...string) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return map[string]any{"metadata": map[string]any{"user_overrides": m}}
	}
	_, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600,"sandbox_type":"process"}]`, over("env_sandbox", "moon"))
	if err == nil || !strings.Contains(err.Error(), `unknown sandbox provider "moon"`) {
		t.Errorf("env_sandbox override: %v", err)
	}
	_, _, err = f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},`+scriptedAssistant+`]`, over("agent_sandbox", "moon"))
	if err == nil || !strings.Contains(err.Error(), `unknown sandbox provider "moon"`) {
		t.Errorf("agent_sandbox override: %v", err)
	}
	_, _, err = f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},`+scriptedAssistant+`]`, over("a2a_agent_id", "ghost-agent"))
	if err == nil || !strings.Contains(err.Error(), "ghost-agent") {
		t.Errorf("a2a_agent_id override: %v", err)
	}
	// --agent-model reaches the prompt response (the scripted agent does
	// not take a model, so nothing is sent to it).
	init := over()
	init["agent_model"] = "model-from-cli"
	rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},`+scriptedAssistant+`,
	 {"id":"p","type":"prompt_agent","prompt_id":"p1","prompt":"hi","model":"model-from-step","poll_interval_seconds":0.05}]`, init)
	if err != nil {
		t.Fatal(err)
	}
	if pr, _ := rc.PromptResponseEntry("p1"); pr["model"] != "model-from-cli" {
		t.Errorf("model %v, want the run's agent_model", pr["model"])
	}
}

// TestOutcomeProgramAndClockErrors: env_outcome_verifier runs a verifier
// program (file_artifact_id) with the MCP URL; a failing program or bad
// output fails the step; the gateway's clock refusal is reported with its
// status; snapshot_env needs snapshot_id in bundle runs.
func TestOutcomeProgramAndClockErrors(t *testing.T) {
	f := envsteptest.New(t)
	ctx := context.Background()
	put := func(id, body string) {
		if _, err := f.Services.Artifacts.PutFile(ctx, id, artifact.FileInput{Filename: "verify.sh", Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	put("good-verifier", "#!/bin/sh\ncase \"$1\" in http://*/mcp) r=passed;; *) r=failed;; esac\n"+
		"[ \"$1\" = \"$AGENTENV_MCP_URL\" ] || r=failed\n"+
		"case \"$AGENTENV_MCP_AUTHORIZATION\" in \"Bearer aer1.\"*) ;; *) r=failed;; esac\nprintf '[{\"criterion\":\"got the MCP url\",\"result\":\"%s\",\"score\":1}]\\n' \"$r\"\n")
	put("crashing-verifier", "#!/bin/sh\necho boom >&2\nexit 3\n")
	put("chatty-verifier", "#!/bin/sh\necho not json\n")
	rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"v","type":"env_outcome_verifier","env_id":"email","file_artifact_id":"good-verifier","verifier_id":"prog"}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := rc.Verification("prog"); v.Score != 1 || v.Results[0]["result"] != true {
		t.Errorf("program verifier %s", asJSON(v))
	}
	for id, want := range map[string]string{"crashing-verifier": "boom", "chatty-verifier": "not a JSON list"} {
		_, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
		 {"id":"v","type":"env_outcome_verifier","env_id":"email","file_artifact_id":"`+id+`"}]`, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", id, err, want)
		}
	}
	_, _, err = f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"c","type":"sync_env_clock","env_id":"email","virtual_time":"9999-12-31T00:00:00Z","virtual_seconds_per_real_second":10}]`, nil)
	if err == nil || !strings.Contains(err.Error(), "clock arm failed (HTTP 400)") {
		t.Errorf("clock refusal: %v", err)
	}
	_, _, err = f.RunTask(t, "@local/pkg/b/t", `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"s","type":"snapshot_env","env_id":"email"}]`, nil)
	if err == nil || !strings.Contains(err.Error(), "snapshot_id") {
		t.Errorf("snapshot in a bundle run without snapshot_id: %v", err)
	}
}

// TestSnapshotDefaultID names a snapshot after the env and the random
// tail of its instance id, so two instances of one env never share one.
func TestSnapshotDefaultID(t *testing.T) {
	f := envsteptest.New(t)
	f.PutInbox(t, "inbox", inbox)
	rc, _, err := f.Run(t, `[
	 {"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"load","type":"load_artifact","env_id":"email","artifact_id":"inbox"},
	 {"id":"snap","type":"snapshot_env","env_id":"email"}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := rc.EnvEntry("email", "")
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := e["instance_id"].(string)
	want := `"snap":{"id":"snapshot-email-` + inst[len(inst)-registry.InstanceSuffixLen:] + `","version":1}`
	if snap, _ := rc.Metadata("env_snapshotted_universes"); !strings.Contains(asJSON(snap), want) {
		t.Errorf("env_snapshotted_universes %s, want %s (instance %s)", asJSON(snap), want, inst)
	}
}

// TestCollectArtifacts gathers a sandbox's files into a universe; bundle
// runs are refused.
func TestCollectArtifacts(t *testing.T) {
	f := envsteptest.New(t)
	ctx := context.Background()
	if _, err := f.Services.Artifacts.PutFile(ctx, "report-file", artifact.FileInput{Filename: "report.txt", Body: strings.NewReader("Q3 ok\n")}); err != nil {
		t.Fatal(err)
	}
	steps := `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm","sandbox_type":"local"},
	 {"id":"load","type":"load_artifact","sandbox_name":"box","artifact_id":"report-file","destination_path":"/app/artifact"},
	 {"id":"all","type":"collect_artifacts","sandbox_name":"box"},
	 {"id":"named","type":"collect_artifacts","sandbox_name":"box","artifact_paths":["report.txt"],"universe_id_suffix":"named"}]`
	rc, _, err := f.RunTask(t, "collect", steps, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := rc.Metadata("collected_artifacts")
	m, _ := got.(map[string]any)
	for _, step := range []string{"all", "named"} {
		e, _ := m[step].(map[string]any)
		id, _ := e["id"].(string)
		u, err := f.Services.Artifacts.GetUniverse(ctx, registry.Ref{ID: id})
		if err != nil || len(u.FileArtifactRefs) != 1 || asJSON(e["files"]) != `["report.txt"]` {
			t.Errorf("%s: %v %+v %v", step, e, u, err)
		}
	}
	if _, _, err := f.RunTask(t, "@local/pkg/b/t", steps, nil); err == nil || !strings.Contains(err.Error(), "refused in bundle runs") {
		t.Errorf("bundle run: %v", err)
	}
	if _, err := f.Runner.ParseTask("t", 1, []byte(`[{"id":"c","type":"collect_artifacts","agent_name":"a","sandbox_name":"box"}]`)); err == nil {
		t.Errorf("two sources should be refused")
	}
}

// TestConversationUserTriggers: a user agent hosting agent-side triggers
// answers turns through decide (say, then end) instead of message/send.
func TestConversationUserTriggers(t *testing.T) {
	f := envsteptest.New(t)
	rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"support","type":"deploy_agent","agent_name":"support","a2a_agent_id":"scripted","env_ids":["email"],"role":"support",
	  "agent_config":{"script":{"rules":[{"when":{"contains":"that's all"},"reply":"Goodbye!"}],"default":{"reply":"How can I help?"}}}},
	 {"id":"customer","type":"deploy_agent","agent_name":"customer","a2a_agent_id":"scripted","role":"customer",
	  "agent_config":{"script":{"default":{"reply":"(the model-less fallback)"}}}}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	cust, _ := rc.AgentEntry("customer")
	body := `{"triggers":[{"id":"thanks","when":{"type":"step","turn":1,"cmp":"eq"},"actions":[{"type":"say","text":"Thanks, that's all."}]},
	  {"id":"bye","when":{"type":"step","turn":2,"cmp":"gte"},"actions":[{"type":"end"}]}]}`
	resp, err := http.Post(cust["api_url"].(string)+"/ext/triggers", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("register user triggers: %v %v", resp, err)
	}
	resp.Body.Close()
	rc2, _, err := f.Run(t, `[{"id":"talk","type":"prompt_agent","agent_name":"support","prompt_id":"c","prompt":"Hi",
	  "user_agent_name":"customer","max_conversation_turns":5,"poll_interval_seconds":0.05}]`, rc.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	pr, _ := rc2.PromptResponseEntry("c")
	if pr["conversation_turns"] != float64(2) || pr["response"] != "Goodbye!" {
		t.Errorf("conversation %s", asJSON(pr))
	}
	if !strings.Contains(asJSON(pr["user_agent_trigger_log"]), `"fired"`) {
		t.Errorf("user trigger log %s", asJSON(pr["user_agent_trigger_log"]))
	}
	if parts := asJSON(pr["source_agent_per_turn_prompt_parts"]); !strings.Contains(parts, "Thanks, that's all.") || strings.Contains(parts, "fallback") {
		t.Errorf("user turns %s", parts)
	}
}

// TestPreflight: unknown envs and agents are problems before anything is
// deployed; registered ones and examples built on first use are not.
func TestPreflight(t *testing.T) {
	f := envsteptest.New(t)
	task, err := f.Runner.ParseTask("t", 1, []byte(`[
	 {"id":"a","type":"deploy_env","env_id":"nowhere"},
	 {"id":"b","type":"deploy_env","env_id":"email"},
	 {"id":"c","type":"deploy_env","env_id":"@local/x/outbox"},
	 {"id":"d","type":"deploy_agent","a2a_agent_id":"nobody"},
	 {"id":"e","type":"deploy_agent","a2a_agent_id":"scripted"}]`))
	if err != nil {
		t.Fatal(err)
	}
	probs := runner.Preflight(context.Background(), task, f.Services)
	if len(probs) != 2 || !strings.Contains(asJSON(fmt.Sprint(probs)), "nowhere") || !strings.Contains(fmt.Sprint(probs), "nobody") {
		t.Errorf("problems %v", probs)
	}
}

// TestReattachInstances: a context rebuilt from a saved one (a resumed
// run) reattaches its envs and agents, so its teardown removes them.
func TestReattachInstances(t *testing.T) {
	f := envsteptest.New(t)
	rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},`+scriptedAssistant+`]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	saved := rc.SafeSnapshot()
	resumed := runner.NewRunContext(saved, f.Services)
	if n := resumed.ReattachInstances(); n != 2 {
		t.Fatalf("reattached %d, want 2", n)
	}
	if n, err := f.Runner.TeardownRun(context.Background(), resumed, 0); err != nil || n != 2 {
		t.Fatalf("teardown of the resumed run: %d %v", n, err)
	}
	e, _ := resumed.EnvEntry("email", "")
	if resp, err := http.Get(e["gateway_url"].(string) + "/.well-known/agent-env.json"); err == nil {
		resp.Body.Close()
		t.Errorf("gateway still answers")
	}
	inst, err := f.Services.Deployer.GetInstance(context.Background(), e["instance_id"].(string))
	if err != nil || inst.Status != "torn_down" {
		t.Errorf("instance record %+v %v", inst, err)
	}
}

// TestCollectFromProcessEnv collects what a deployed env wrote into its
// work folder on the process sandbox, by env_id.
func TestCollectFromProcessEnv(t *testing.T) {
	f := envsteptest.New(t)
	rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := rc.EnvEntry("email", "")
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := e["sandbox_id"].(string)
	pb, ok := f.Services.Deployer.Backends["process"].(*process.Provider)
	if !ok {
		t.Fatalf("backends %v", f.Services.Deployer.Backends)
	}
	dir := filepath.Join(pb.GroupDir(sid), "artifact")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mailbox.json"), []byte(`{"sent":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	task, err := f.Runner.ParseTask("t", 1, []byte(`[{"id":"c","type":"collect_artifacts","env_id":"email"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Runner.Run(context.Background(), task, rc, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := rc.Metadata("collected_artifacts")
	c, _ := got.(map[string]any)["c"].(map[string]any)
	if asJSON(c["files"]) != `["mailbox.json"]` {
		t.Fatalf("collected %v", got)
	}
	id, _ := c["id"].(string)
	u, err := f.Services.Artifacts.GetUniverse(context.Background(), registry.Ref{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	rd, _, err := f.Services.Artifacts.OpenFile(context.Background(), u.FileArtifactRefs["mailbox.json"])
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if b, _ := io.ReadAll(rd); string(b) != `{"sent":1}` {
		t.Errorf("content %q", b)
	}
}
