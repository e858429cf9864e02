package envsteptest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// getJSON GETs a URL and decodes its JSON answer.
func getJSON(t *testing.T, u string) map[string]any {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", u, resp.StatusCode, err)
	}
	return m
}

// TestAgentPlacementSkillsSnapshot: deploy_agent places the scripted agent
// on a VM sandbox (sandbox_name), install_agent starts a second one on the
// same sandbox, load_artifact gives the first a file and add_skills points
// it there next to an inline skill, a prompt runs, and
// snapshot_agent_state saves the conversation and the env's data into a
// file_artifact_universe.
func TestAgentPlacementSkillsSnapshot(t *testing.T) {
	f := envsteptest.New(t)
	ctx := context.Background()
	if _, err := f.Services.Artifacts.PutFile(ctx, "place-docs", artifact.FileInput{Filename: "GUIDE",
		Body: strings.NewReader("# Guide\n")}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := f.Run(t, `[
	 {"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm","exposed_ports":[8000,8100]},
	 {"id":"solver","type":"deploy_agent","agent_name":"solver","a2a_agent_id":"scripted","sandbox_name":"box","env_ids":["email"],
	  "agent_config":{"script":{"default":{"reply":"On it: {{prompt}}"}}}},
	 {"id":"helper","type":"install_agent","sandbox_name":"box","a2a_agent_id":"scripted","agent_name":"helper","a2a_port":8100},
	 {"id":"load","type":"load_artifact","agent_name":"solver","artifact_id":"place-docs"},
	 {"id":"skills","type":"add_skills","agent_name":"solver","file_artifact_universe_ids":["place-docs"],
	  "skills":[{"name":"triage","description":"Sort the inbox first.","body":"Read every email, then answer.","license":"MIT"}]},
	 {"id":"ask","type":"prompt_agent","agent_name":"solver","prompt_id":"ask","prompt":"sort my inbox","poll_interval_seconds":0.05},
	 {"id":"save","type":"snapshot_agent_state","agent_name":"solver","prompt_id":"ask","artifact_id":"place-solver-state","env_id":"email"}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	box, _ := rc.EntrySandboxID("deployed_sandboxes", "sandbox_name", "box")
	solver, _ := rc.AgentEntry("solver")
	helper, _ := rc.AgentEntry("helper")
	if solver["sandbox_id"] != box || solver["sandbox_name"] != "box" || solver["on_host"] != false {
		t.Errorf("solver entry %s", asJSON(solver))
	}
	if helper["sandbox_id"] != box || helper["on_host"] != true || helper["a2a_agent_id"] != "scripted" || helper["api_url"] == solver["api_url"] {
		t.Errorf("helper entry %s", asJSON(helper))
	}
	// Placed and installed agents are recorded like deployed ones, in the
	// sandbox they run in.
	for _, e := range []map[string]any{solver, helper} {
		id, _ := e["instance_id"].(string)
		inst, err := f.Services.Deployer.GetAgentInstance(ctx, id)
		if err != nil || inst.Status != envdeploy.StatusDeployed || inst.SandboxID != box || inst.APIURL != e["api_url"] || inst.AgentID != "scripted" {
			t.Errorf("agent instance %q of %v: %+v %v", id, e["agent_name"], inst, err)
		}
	}
	if card := getJSON(t, helper["api_url"].(string)+"/.well-known/agent.json"); card["name"] != "scripted" {
		t.Errorf("helper card %v", card)
	}
	skills := getJSON(t, solver["api_url"].(string)+"/ext/skill-config")["skills"].(map[string]any)
	var files string
	for name := range skills {
		if strings.HasPrefix(name, "place-docs-") && strings.HasSuffix(name, "-files") {
			files = name
		}
	}
	if skills["triage"] == nil || files == "" || !strings.Contains(asJSON(skills[files]), "/tmp/file_artifacts") {
		t.Errorf("skills %s", asJSON(skills))
	}
	added, _ := rc.Metadata("added_skills")
	if !strings.Contains(asJSON(added), `"skills":["triage","`+files+`"]`) {
		t.Errorf("added_skills %s", asJSON(added))
	}
	pr, _ := rc.PromptResponseEntry("ask")
	if pr["response"] != "On it: sort my inbox" {
		t.Fatalf("prompt response %s", asJSON(pr))
	}
	snaps, _ := rc.Metadata("agent_snapshots")
	list, _ := snaps.([]any)
	if len(list) != 1 {
		t.Fatalf("agent_snapshots %s", asJSON(snaps))
	}
	s := list[0].(map[string]any)
	if s["id"] != "place-solver-state" || s["source_agent_name"] != "solver" || s["source_context_id"] != pr["a2a_context_id"] || s["bundle_object_url"] == "" {
		t.Errorf("snapshot %s", asJSON(s))
	}
	u, err := f.Services.Artifacts.GetUniverse(ctx, registry.Ref{ID: "place-solver-state"})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := f.Services.Artifacts.OpenFile(ctx, u.FileArtifactRefs["trajectory.json"])
	if err != nil {
		t.Fatalf("members %v: %v", u.FileArtifactRefs, err)
	}
	traj, _ := io.ReadAll(r)
	r.Close()
	if !strings.Contains(string(traj), `"prompt":"sort my inbox"`) || !strings.Contains(string(traj), `"reply":"On it: sort my inbox"`) {
		t.Errorf("trajectory %s", traj)
	}
	if _, ok := u.FileArtifactRefs["services/email.json"]; !ok {
		t.Errorf("no env data in %v", u.FileArtifactRefs)
	}
	if j, _ := rc.Metadata("snapshot_json_url"); !strings.Contains(asJSON(j), "email") {
		t.Errorf("snapshot_json_url %v", j)
	}
	// The run's teardown closes their records.
	if _, err := f.Runner.TeardownRun(ctx, rc, 0); err != nil {
		t.Fatal(err)
	}
	for _, e := range []map[string]any{solver, helper} {
		id, _ := e["instance_id"].(string)
		if inst, err := f.Services.Deployer.GetAgentInstance(ctx, id); err != nil || inst.Status != envdeploy.StatusTornDown {
			t.Errorf("agent instance %q after teardown: %+v %v", id, inst, err)
		}
	}
}

// TestHumanAgentTriggersUserURL: deploy_human_agent registers an external
// endpoint (here a scripted agent deployed by an earlier run, and one that
// does not answer: a synthesized card); register_agent_triggers gives it
// deterministic turns; prompt_agent talks to it through user_a2a_url.
func TestHumanAgentTriggersUserURL(t *testing.T) {
	f := envsteptest.New(t)
	rc, _, err := f.Run(t, `[
	 {"id":"support","type":"deploy_agent","agent_name":"support","a2a_agent_id":"scripted",
	  "agent_config":{"script":{"rules":[{"when":{"contains":"that's all"},"reply":"Goodbye!"}],"default":{"reply":"How can I help?"}}}},
	 {"id":"customer","type":"deploy_agent","agent_name":"customer","a2a_agent_id":"scripted",
	  "agent_config":{"script":{"default":{"reply":"(the model-less fallback)"}}}}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	cust, _ := rc.AgentEntry("customer")
	url := cust["api_url"].(string)
	rc2, _, err := f.Run(t, `[
	 {"id":"human","type":"deploy_human_agent","a2a_url":"`+url+`"},
	 {"id":"trig","type":"register_agent_triggers","agent_name":"human_agent","triggers":[
	   {"id":"thanks","when":{"type":"step","turn":1,"cmp":"eq"},"actions":[{"type":"say","text":"Thanks, that's all."}]},
	   {"id":"bye","when":{"type":"any","of":[{"type":"step","turn":2,"cmp":"gte"}]},"actions":[{"type":"end"}]}]},
	 {"id":"talk","type":"prompt_agent","agent_name":"support","prompt_id":"c","prompt":"Hi","user_a2a_url":"`+url+`",
	  "max_conversation_turns":5,"poll_interval_seconds":0.05}]`, rc.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	h, _ := rc2.AgentEntry("human_agent")
	if h["api_url"] != url || h["a2a_url"] != url || h["human"] != true || h["a2a_card"].(map[string]any)["name"] != "customer" {
		t.Errorf("human entry %s", asJSON(h))
	}
	if ha, _ := rc2.Metadata("human_agents"); !strings.Contains(asJSON(ha), `"agent_name":"human_agent"`) {
		t.Errorf("human_agents %s", asJSON(ha))
	}
	if reg, _ := rc2.Metadata("agent_trigger_registrations"); !strings.Contains(asJSON(reg), `"added":["thanks","bye"]`) {
		t.Errorf("agent_trigger_registrations %s", asJSON(reg))
	}
	pr, _ := rc2.PromptResponseEntry("c")
	if pr["conversation_turns"] != float64(2) || pr["response"] != "Goodbye!" || pr["user_a2a_url"] != url {
		t.Errorf("conversation %s", asJSON(pr))
	}
	if parts := asJSON(pr["source_agent_per_turn_prompt_parts"]); !strings.Contains(parts, "Thanks, that's all.") {
		t.Errorf("user turns %s", parts)
	}

	// An endpoint that serves no card gets a synthesized one; a second
	// human agent in the same run is refused; triggers naming an env
	// trigger nobody registered are refused before anything is sent.
	rc3, _, err := f.Run(t, `[{"id":"h","type":"deploy_human_agent","agent_name":"desk","a2a_url":"http://127.0.0.1:1"}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := rc3.AgentEntry("desk"); d["a2a_card"].(map[string]any)["description"] != "A human operator available to answer questions" {
		t.Errorf("synthesized card %s", asJSON(d))
	}
	_, _, err = f.Run(t, `[{"id":"h2","type":"deploy_human_agent","agent_name":"desk2","a2a_url":"http://127.0.0.1:1"}]`, rc3.Snapshot())
	if err == nil || !strings.Contains(err.Error(), "only one is allowed per task") {
		t.Errorf("second human agent: %v", err)
	}
	_, _, err = f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"t","type":"register_agent_triggers","agent_name":"customer","triggers":[
	   {"id":"x","when":{"type":"env_trigger","env_id":"email","trigger_id":"nope","status":"fired"},"actions":[{"type":"end"}]}]}]`, rc.Snapshot())
	if err == nil || !strings.Contains(err.Error(), `names env trigger "nope", which no register_env_triggers step registered on env "email"`) {
		t.Errorf("unregistered env trigger: %v", err)
	}
}
