package runner_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
)

// addEnvs records deployed envs as deploy_env does.
type addEnvs struct{ entries []map[string]any }

func (s *addEnvs) Run(_ context.Context, rc *runner.RunContext) error {
	for _, e := range s.entries {
		if err := rc.AddEnvEntry(e); err != nil {
			return err
		}
	}
	return nil
}

// A run stores each deployed env's gateway trajectory in the object store
// before its record is finished, and records where (or why not) in
// metadata.env_trajectories.
func TestRunStoresGatewayTrajectories(t *testing.T) {
	const jsonl = `{"event_id":1,"event_type":"tool_call","role":"agent","tool_name":"mail_send","arguments":{"to":"alice"}}
{"event_id":2,"event_type":"tool_result","tool_name":"mail_send","latency_ms":12.5}
`
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/trajectory" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, jsonl)
	}))
	defer gw.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer broken.Close()

	dir := t.TempDir()
	docs, err := sqlite.Open(context.Background(), filepath.Join(dir, "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer docs.Close()
	objs, err := fsobject.New(filepath.Join(dir, "objects"), nil)
	if err != nil {
		t.Fatal(err)
	}
	step := &addEnvs{entries: []map[string]any{
		{"env_id": "mail", "gateway_url": gw.URL, "instance_id": "mail-1"},
		{"env_id": "slack", "gateway_url": broken.URL, "instance_id": "slack-1"},
		{"env_id": "solo", "mcp_url": "http://127.0.0.1:1/mcp", "env_provider_type": "server"},
	}}
	reg := runner.NewStepRegistry()
	reg.Register(runner.StepInfo{Type: "add_envs", New: func() runner.Step { return step }})
	r := runner.New(&runner.Options{Steps: reg})
	task, err := r.ParseTask("gwtraj", 1, []byte(`[{"id":"envs","type":"add_envs"}]`))
	if err != nil {
		t.Fatal(err)
	}
	id := registry.NewInstanceID("gwtraj")
	rc := runner.NewRunContext(nil, &runner.Services{Documents: docs, Objects: objs})
	if res, err := r.Run(context.Background(), task, rc, &runner.RunOptions{Documents: docs, InstanceID: id}); err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("run: %v %+v", err, res)
	}
	inst, err := runner.GetInstance(context.Background(), docs, id)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := inst.Context["metadata"].(map[string]any)
	got, _ := md[runner.KeyEnvTrajectories].(map[string]any)
	mail, _ := got["mail"].(map[string]any)
	key := "env_trajectories/" + id + "/mail.jsonl"
	if mail["object_key"] != key || mail["object_url"] != objs.URL(key) || mail["bytes"] != float64(len(jsonl)) || mail["instance_id"] != "mail-1" {
		t.Errorf("mail entry = %v", mail)
	}
	rd, _, err := objs.Open(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rd)
	rd.Close()
	if string(b) != jsonl {
		t.Errorf("stored trajectory = %q", b)
	}
	slack, _ := got["slack"].(map[string]any)
	if e, _ := slack["error"].(string); !strings.Contains(e, "HTTP 500") || slack["object_key"] != nil {
		t.Errorf("slack entry = %v; want an error naming HTTP 500", slack)
	}
	if _, ok := got["solo"]; ok {
		t.Errorf("an env without a gateway has an entry: %v", got["solo"])
	}
}
