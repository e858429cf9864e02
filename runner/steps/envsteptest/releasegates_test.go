package envsteptest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// TestSpecConformance: the email env serves no OpenAPI document, so the
// gate is skipped (advisory); the broken env's document disagrees with
// its tool, so the gate fails naming the blocking drift and reports the
// undeclared optional parameter without failing on it.
func TestSpecConformance(t *testing.T) {
	f := envsteptest.New(t)
	bin := buildBroken(t)
	if _, err := f.Putter.PutMCPServer(context.Background(), envdeploy.MCPServerInput{ID: "broken", EnvironmentName: "broken",
		Image: envdeploy.ImageInput{Binary: bin}}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"spec","type":"verify_spec_conformance","env_id":"email"}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rc.Verification("spec_conformance")
	if err != nil || v.Score != 1 || v.Results[0]["skipped"] != true {
		t.Fatalf("email spec_conformance %+v %v", v, err)
	}
	d, _ := rc.Metadata("mcp_spec_conformance")
	if s := asJSON(d); !strings.Contains(s, `"skipped":true`) || !strings.Contains(s, `"passed":false`) || !strings.Contains(s, "HTTP 404") {
		t.Errorf("email mcp_spec_conformance %s", s)
	}

	rc, _, err = f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"broken","ttl_seconds":600},
	 {"id":"spec","type":"verify_spec_conformance","env_id":"broken"}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, _ = rc.Verification("spec_conformance")
	rows := asJSON(v.Results)
	if v.Score != 0 || !strings.Contains(rows, "missing_tool delete") || !strings.Contains(rows, "type_mismatch broken_search: spec type 'integer' != tool type 'string'") {
		t.Fatalf("broken spec_conformance %s", rows)
	}
	if strings.Contains(rows, "extra_param") {
		t.Errorf("an undeclared optional parameter failed the gate: %s", rows)
	}
	d, _ = rc.Metadata("mcp_spec_conformance")
	if s := asJSON(d); !strings.Contains(s, `"kind":"extra_param","param":"tags"`) && !strings.Contains(s, `"param":"tags"`) {
		t.Errorf("broken mcp_spec_conformance lacks the extra tags param: %s", s)
	}
}

// TestEnvAssessment: a scripted agent bound to the env answers the
// tool-correctness prompt; verify_mcp_env_assessment reads its JSON and
// records mcp_tool_correctness, which the aggregator can then require.
func TestEnvAssessment(t *testing.T) {
	f := envsteptest.New(t)
	const answer = `{\"results\":[{\"tool\":\"email_send_message\",\"passed\":true},{\"tool\":\"email_search\",\"passed\":false,\"reason\":\"finds nothing\"}]}`
	rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"agent","type":"deploy_agent","a2a_agent_id":"scripted","env_ids":["email"],
	  "agent_config":{"script":{"default":{"reply":"`+answer+`"}}}},
	 {"id":"ask","type":"prompt_agent","prompt_id":"assess","prompt":"check the tools","poll_interval_seconds":0.05},
	 {"id":"assess","type":"verify_mcp_env_assessment","env_id":"email","prompt_id":"assess"},
	 {"id":"gate","type":"validation_gate_aggregator","env_id":"email","required_gates":["mcp_tool_correctness"]}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rc.Verification("mcp_tool_correctness")
	if err != nil || v.Score != 0 || !strings.Contains(asJSON(v.Results), "tool email_search failed: finds nothing") {
		t.Fatalf("mcp_tool_correctness %+v %v", v, err)
	}
	d, _ := rc.Metadata("mcp_tool_correctness_validation")
	if s := asJSON(d); !strings.Contains(s, `"total_tools":2`) || !strings.Contains(s, `"passed":false`) {
		t.Errorf("mcp_tool_correctness_validation %s", s)
	}
	gate, _ := rc.Metadata("validation_gate")
	if s := asJSON(gate); !strings.Contains(s, `"failed_gates":["mcp_tool_correctness"]`) {
		t.Errorf("validation_gate %s", s)
	}
}

// TestUniverseRoundtripCombine loads a universe into the email env, round
// trips it (compatible: the email server keeps what it is given), emits
// the judge's file universe, and combines a judge verdict that flags the
// email server: the combined verdict is then incompatible and final.
func TestUniverseRoundtripCombine(t *testing.T) {
	f := envsteptest.New(t)
	ctx := context.Background()
	f.PutInbox(t, "rt-inbox", `{"messages":[{"id":"m1","folder":"inbox","from":"alice@example.com","to":["me@example.com"],
	 "subject":"Q3","body":"numbers attached","sent_at":"2026-01-02T10:00:00-04:00","read":false}]}`)
	e, err := f.Services.Artifacts.GetEnvironment(ctx, registry.Ref{ID: "rt-inbox"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Services.Artifacts.PutEnvironmentUniverse(ctx, "rt-universe", []registry.Ref{e.Ref()}, nil, "round trip test"); err != nil {
		t.Fatal(err)
	}
	rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"rt","type":"verify_universe_load_export_roundtrip","env_id":"email","universe_artifact_id":"rt-universe",
	  "emit_file_artifact_universe":true,"persist_result":false}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rc.Verification("universe_compatibility")
	d, _ := rc.Metadata("universe_compatibility")
	s := asJSON(d)
	if err != nil || v.Score != 1 || !strings.Contains(s, `"compatible":true`) || !strings.Contains(s, `"final":false`) {
		t.Fatalf("universe_compatibility %+v %v\n%s", v, err, s)
	}
	m := d.(map[string]any)
	fauID, _ := m["file_artifact_universe_id"].(string)
	fau, err := f.Services.Artifacts.GetUniverse(ctx, registry.Ref{ID: fauID})
	if err != nil {
		t.Fatalf("file universe %q: %v", fauID, err)
	}
	for _, k := range []string{"original/email.json", "export_1/email.json", "export_2/email.json"} {
		if _, ok := fau.FileArtifactRefs[k]; !ok {
			t.Errorf("file universe lacks %s: %v", k, fau.FileArtifactRefs)
		}
	}
	if _, err := f.Services.Artifacts.GetEnvironmentUniverse(ctx, registry.Ref{ID: m["exported_universe_artifact_id"].(string)}); err != nil {
		t.Errorf("exported universe: %v", err)
	}

	// The judge: a scripted agent's verdict graded by criterion id, the
	// email server's criterion failing.
	rc, _, err = f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"rt","type":"verify_universe_load_export_roundtrip","env_id":"email","universe_artifact_id":"rt-universe","persist_result":false},
	 {"id":"judge","type":"deploy_agent","a2a_agent_id":"scripted","agent_name":"judge",
	  "agent_config":{"script":{"default":{"reply":"email: the body of m1 was truncated"}}}},
	 {"id":"ask","type":"prompt_agent","agent_name":"judge","prompt_id":"judge","prompt":"compare","poll_interval_seconds":0.05},
	 {"id":"grade","type":"agent_prompt_response_verifier","prompt_id":"judge","verifier_id":"universe-judge","criteria":[
	   {"id":"service_preserved__email","type":"response_contains","needles":["preserved"]},
	   {"id":"record_preservation","type":"response_contains","needles":["email"]}]},
	 {"id":"combine","type":"combine_universe_verdicts","env_id":"email","universe_artifact_id":"rt-universe",
	  "universe_artifact_version":1,"judge_verifier_id":"universe-judge"}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, _ = rc.Verification("universe_compatibility")
	d, _ = rc.Metadata("universe_compatibility")
	s = asJSON(d)
	if v.Score != 0 || !strings.Contains(s, `"compatible":false`) || !strings.Contains(s, `"final":true`) ||
		!strings.Contains(s, `"type":"agent_judge"`) || strings.Contains(s, "(cross-service)") {
		t.Fatalf("combined universe_compatibility %+v\n%s", v, s)
	}
	if !strings.Contains(asJSON(v.Results), "server email: agent_judge email.(semantic)") {
		t.Errorf("rows %s", asJSON(v.Results))
	}
}

// TestA2AInstallSnapshotGates installs the scripted agent on a VM
// sandbox as install-test-agent and checks it with verify_a2a_install,
// once by its own probe and once from a grade of a prompt; then saves a
// snapshot of a second agent's conversation and records
// verify_a2a_snapshot from a grade of an answer (the step records the
// grade it is given; producing a recall after a load is the earlier
// steps' business).
func TestA2AInstallSnapshotGates(t *testing.T) {
	f := envsteptest.New(t)
	// An installed agent gets no agent-config: this one answers from its
	// startup script.
	if _, err := f.Putter.PutAgent(context.Background(), envdeploy.AgentInput{ID: "scripted-ok",
		Image:   envdeploy.ImageInput{Binary: envsteptest.Build(t).Agent},
		EnvVars: map[string]string{"SCRIPTED_AGENT_SCRIPT": `{"default":{"reply":"OK"}}`}}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := f.Run(t, `[
	 {"id":"box","type":"deploy_sandbox","sandbox_name":"install-test-host","sandbox_mode":"vm","exposed_ports":[8000]},
	 {"id":"install","type":"install_agent","sandbox_name":"install-test-host","a2a_agent_id":"scripted-ok","agent_name":"install-test-agent"},
	 {"id":"probe-gate","type":"verify_a2a_install","a2a_agent_id":"scripted-ok"},
	 {"id":"ask","type":"prompt_agent","agent_name":"install-test-agent","prompt_id":"ok","prompt":"Respond with OK.","poll_interval_seconds":0.05},
	 {"id":"grade","type":"agent_prompt_response_verifier","prompt_id":"ok","verifier_id":"install-rubric",
	  "criteria":[{"id":"responded","type":"response_regex_present","pattern":"\\S"}]},
	 {"id":"install-gate","type":"verify_a2a_install","a2a_agent_id":"scripted-ok","rubric_verifier_id":"install-rubric"},
	 {"id":"snap","type":"deploy_agent","a2a_agent_id":"scripted","agent_name":"snap",
	  "agent_config":{"script":{"default":{"reply":"noted: {{prompt}}"}}}},
	 {"id":"plant","type":"prompt_agent","agent_name":"snap","prompt_id":"plant","prompt":"remember TOKEN-7","poll_interval_seconds":0.05},
	 {"id":"save","type":"snapshot_agent_state","agent_name":"snap","prompt_id":"plant","artifact_id":"install-test-state"},
	 {"id":"recall","type":"agent_prompt_response_verifier","prompt_id":"plant","verifier_id":"recall-rubric",
	  "criteria":[{"id":"snapshot_recall_token","type":"response_contains","needles":["TOKEN-7"]}]},
	 {"id":"snapshot-gate","type":"verify_a2a_snapshot","a2a_agent_id":"scripted","rubric_verifier_id":"recall-rubric","rubric_criterion_id":"snapshot_recall_token"},
	 {"id":"wrong-gate","type":"verify_a2a_install","a2a_agent_id":"scripted-ok","agent_name":"nobody"}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	details, _ := rc.Metadata("validated_a2a")
	dm, _ := details.(map[string]any)
	// The last install gate (agent_name nobody) wrote last: it failed.
	v, _ := rc.Verification("a2a_install")
	if v.Score != 0 || !strings.Contains(asJSON(v.Results), `no agent named \"nobody\" was installed`) {
		t.Errorf("a2a_install for nobody %s", asJSON(v))
	}
	snap, _ := rc.Verification("a2a_snapshot")
	sd := asJSON(dm["a2a_snapshot"])
	if snap.Score != 1 || !strings.Contains(sd, `"supported":true`) || !strings.Contains(sd, `"extension_advertised":true`) {
		t.Errorf("a2a_snapshot %s %s", asJSON(snap), sd)
	}

	// Both passing install gates, each from a run of its own.
	for _, gate := range []string{
		`{"id":"probe-gate","type":"verify_a2a_install","a2a_agent_id":"scripted-ok"}`,
		`{"id":"ask","type":"prompt_agent","agent_name":"install-test-agent","prompt_id":"ok","prompt":"Respond with OK.","poll_interval_seconds":0.05},
		 {"id":"grade","type":"agent_prompt_response_verifier","prompt_id":"ok","verifier_id":"install-rubric",
		  "criteria":[{"id":"responded","type":"response_regex_present","pattern":"\\S"}]},
		 {"id":"install-gate","type":"verify_a2a_install","a2a_agent_id":"scripted-ok","rubric_verifier_id":"install-rubric"}`,
	} {
		rc, _, err := f.Run(t, `[
		 {"id":"box","type":"deploy_sandbox","sandbox_name":"install-test-host","sandbox_mode":"vm","exposed_ports":[8000]},
		 {"id":"install","type":"install_agent","sandbox_name":"install-test-host","a2a_agent_id":"scripted-ok","agent_name":"install-test-agent"},
		 `+gate+`]`, nil)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := rc.Verification("a2a_install")
		details, _ := rc.Metadata("validated_a2a")
		d := asJSON(details.(map[string]any)["a2a_install"])
		if v.Score != 1 || !strings.Contains(d, `"supported":true`) || !strings.Contains(d, `"responded_to_prompt":true`) ||
			!strings.Contains(d, `"installed_successfully":true`) {
			t.Errorf("a2a_install %s %s", asJSON(v), d)
		}
	}
}
