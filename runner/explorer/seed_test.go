package explorer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner/explorer"
)

// fixture is a store seeded with a known set of records, and an explorer
// serving it over a real loopback socket.
type fixture struct {
	t    testing.TB
	docs *sqlite.Store
	objs *fsobject.Store
	srv  *httptest.Server
	dir  string
	h    *explorer.Server
}

func newFixture(t testing.TB, o *explorer.Options) *fixture {
	t.Helper()
	dir := t.TempDir()
	docs, err := sqlite.Open(context.Background(), filepath.Join(dir, "documents.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = docs.Close() })
	objs, err := fsobject.New(filepath.Join(dir, "objects"), nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := explorer.New(&explorer.Stores{Documents: docs, Objects: objs}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{t: t, docs: docs, objs: objs, srv: srv, dir: dir, h: h}
}

func (f *fixture) put(c registry.Collection, id, body string) {
	f.t.Helper()
	if _, err := f.docs.Put(context.Background(), c, id, json.RawMessage(body), nil); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) record(c registry.Collection, key, body string) {
	f.t.Helper()
	if _, err := f.docs.UpsertRecord(context.Background(), c, key, json.RawMessage(body)); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) object(key, body string) {
	f.t.Helper()
	if _, err := f.objs.Put(context.Background(), key, strings.NewReader(body), nil); err != nil {
		f.t.Fatal(err)
	}
}

const (
	taskID    = "@local/demo/q3"
	doneID    = "@local/demo/q3/q3-done0001"
	failedID  = "@local/demo/q3/q3-fail0001"
	runningID = "@local/demo/q3/q3-live0001"
	agentTraj = "prompt_agent_trajectories/@local/demo/q3/q3-done0001/prompt_id=q3/trajectory.json"
	gwTraj    = "env_trajectories/q3-done0001/email.jsonl"
)

// instance builds a task_instances body.
func instance(id, status string, done []string, extra string) string {
	steps := make([]string, len(done))
	for i, s := range done {
		st := "success"
		if strings.HasPrefix(s, "!") {
			s, st = s[1:], "failure"
		}
		steps[i] = fmt.Sprintf(`{"step_id":%q,"status":%q}`, s, st)
	}
	errField := "null"
	if status == "failed" {
		errField = `"step \"agent\" (deploy_agent) failed: agent exited with status 2"`
	}
	return fmt.Sprintf(`{"instance_id":%q,"task_id":%q,"task_version":1,"total_steps":4,"created_at_utc":"2026-03-02 09:00 UTC",
"completed_at_utc":"2026-03-02 09:01 UTC","rev":3,"status":%q,"error":%s,"current_step":%d,"completed_steps":[%s],
"context":{%s}}`, id, taskID, status, errField, len(done), strings.Join(steps, ","), extra)
}

// seed writes one task with four steps, three instances (completed with
// scores and a trajectory, failed, running), their journal, two
// trajectories, and an eval run twice.
func (f *fixture) seed() {
	f.put(registry.Tasks, taskID, `{"type":"task","steps":[{"id":"env","type":"deploy_env","env_id":"email"},
{"id":"agent","type":"deploy_agent","a2a_agent_id":"scripted"},{"id":"prompt","type":"prompt_agent","prompt":"Reply to Alice"},
{"id":"check","type":"env_outcome_verifier","depends_on":["prompt"]}]}`)
	f.put(registry.Tasks, taskID, `{"type":"task","steps":[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600}]}`)
	f.put(registry.Envs, "email", `{"type":"multi","name":"email","description":"a mailbox"}`)
	f.put(registry.Evals, "weekly", `{"type":"eval","tasks":[{"task_id":"@local/demo/q3","version":1}]}`)
	f.liveInstance("email-0001", "http://127.0.0.1:1", "torn_down")
	done := `"prompt_responses":[{"step_id":"prompt","prompt_id":"q3","prompt_text":"Reply to Alice","response":"Done: replied.",
"tool_call_count":2,"agent_trajectory_object_url":"` + f.objs.URL(agentTraj) + `"},
{"step_id":"prompt","prompt_id":"q4","prompt_text":"And Bob?","response":"No.","tool_call_count":0,"agent_trajectory_object_url":"` + f.objs.URL("prompt_agent_trajectories/deleted.json") + `"}],
"deployed_envs":[{"instance_id":"email-abc","env_id":"email","env_version":1,"sandbox_id":"process-abc"}],
"deployed_agents":[{"instance_id":"scripted-abc","a2a_agent_id":"scripted","a2a_agent_version":1,"role":"assistant","sandbox_id":"process-def"}],
"metadata":{"env_trajectories":{"email":{"env_id":"email","instance_id":"email-abc","object_key":"` + gwTraj + `","object_url":"` + f.objs.URL(gwTraj) + `","bytes":700},
"slack":{"env_id":"slack","instance_id":"slack-abc","error":"GET http://127.0.0.1:1/trajectory: connection refused"}},
"verifications":{"check":{"score":1,"results":[{"criterion":"a reply to Alice is in the sent folder","result":true,"score":1,"justification":"found Re: Q3"},
{"criterion":"it is polite","result":false,"score":0.5,"justification":"terse","id":"polite"}]}}}`
	f.record(registry.TaskInstances, doneID, instance(doneID, "completed", []string{"env", "agent", "prompt", "check"}, done))
	f.record(registry.TaskInstances, failedID, instance(failedID, "failed", []string{"env"}, `"metadata":{}`))
	f.record(registry.TaskInstances, runningID, instance(runningID, "running", []string{"env"}, `"metadata":{}`))
	for i, st := range []string{"__seed__", "env", "agent", "prompt", "check"} {
		f.record(registry.TaskStepJournal, doneID+"|"+st, fmt.Sprintf(`{"instance_id":%q,"step_id":%q,"seq":%d,"status":"success",
"recorded_at":"2026-03-02T09:00:%02d.000000+00:00","ops":{"sets":[{"path":["step_%d"],"value":{"n":%d}}]}}`, doneID, st, i, i*3, i, i))
	}
	f.object(agentTraj, `[{"type":"tool_call","name":"email_search","arguments":{"query":"Q3"},"step":0},
{"type":"tool_result","name":"email_search","text":"{\"messages\":[{\"id\":\"m1\"}]}","is_error":false,"step":0},
{"type":"tool_call","name":"email_send_message","arguments":{"to":["alice@example.com"]},"step":1},
{"type":"tool_result","name":"email_send_message","text":"sent","is_error":false,"step":1},
{"type":"final","text":"Done: replied."}]`)
	f.object(gwTraj, `{"event_type":"tool_call","event_id":"event_1","timestamp_utc":"2026-03-02T09:00:01.000000+00:00","virtual_time":"2026-03-02T09:00:00Z","role":"assistant","tool_call":{"function_name":"email_search","arguments":{"query":"Q3"}}}
{"event_type":"tool_call_result","event_id":"event_2","timestamp_utc":"2026-03-02T09:00:01.250000+00:00","virtual_time":"2026-03-02T09:00:00Z","tool_call_event_id":"event_1","tool_call_result":{"content":[{"type":"text","text":"1 message"}],"isError":false}}
{"event_type":"trigger_fired","event_id":"event_3","timestamp_utc":"2026-03-02T09:00:02.000000+00:00","virtual_time":"2026-03-02T10:00:00Z","trigger_id":"boss-mail"}
`)
	f.object("broken.json", `[{"type":"final","text":"cut`)
	// An eval run twice: group g1 (both pass), group g2 (one fails).
	for i, r := range []struct{ id, group, status, score string }{
		{"@local/demo/q3/e1", "g1", "completed", "1"}, {"@local/demo/q3/e2", "g1", "completed", "1"},
		{"@local/demo/q3/e3", "g2", "completed", "1"}, {"@local/demo/q3/e4", "g2", "completed", "0.25"},
	} {
		f.record(registry.TaskInstances, r.id, instance(r.id, r.status, []string{"env", "agent", "prompt", "check"},
			fmt.Sprintf(`"metadata":{"eval_id":"weekly","run_group_id":%q,"verifications":{"check":{"score":%s,"results":[]}}}`, r.group, r.score)))
		_ = i
	}
}
