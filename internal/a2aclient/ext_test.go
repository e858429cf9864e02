package a2aclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentenv/agentenv/internal/a2aclient"
	"github.com/agentenv/agentenv/protocol"
)

func TestConfigureSendsOnlySupportedFields(t *testing.T) {
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != protocol.AgentConfigPath {
			http.NotFound(w, r)
			return
		}
		var m map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &m)
		got = append(got, m)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	ac := a2aclient.New(srv.URL, srv.Client())
	card := json.RawMessage(`{"capabilities":{"extensions":[{"uri":"` + protocol.URIAgentConfig +
		`","params":{"methods":{"set":{"request":{"supported":["model","effort"]}}}}}]}}`)
	want := map[string]any{"model": "m", "system_prompt": "s"}
	if err := ac.Configure(context.Background(), card, want); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0]) != 1 || got[0]["model"] != "m" {
		t.Errorf("sent %v; want only the model", got)
	}
	if len(want) != 2 {
		t.Errorf("Configure changed its argument: %v", want)
	}
	// Nothing supported: nothing sent.
	if err := ac.Configure(context.Background(), card, map[string]any{"harness": "x"}); err != nil || len(got) != 1 {
		t.Errorf("err %v, %d requests; want none sent", err, len(got))
	}
}

func TestTrajectory(t *testing.T) {
	answers := map[string]struct {
		status int
		body   string
	}{"kept": {200, `{"trajectory":[{"kind":"message"}]}`}, "none": {404, `{}`}, "broken": {500, `boom`}, "empty": {200, `{}`}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			TaskID string `json:"task_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		a := answers[req.TaskID]
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	defer srv.Close()
	ac := a2aclient.New(srv.URL, srv.Client())
	ctx := context.Background()
	if tr, err := ac.Trajectory(ctx, "kept"); err != nil || string(tr) != `[{"kind":"message"}]` {
		t.Errorf("kept: %s, %v", tr, err)
	}
	if _, err := ac.Trajectory(ctx, "none"); !errors.Is(err, a2aclient.ErrNoTrajectory) {
		t.Errorf("none: %v; want ErrNoTrajectory", err)
	}
	var he *a2aclient.HTTPError
	if _, err := ac.Trajectory(ctx, "broken"); !errors.As(err, &he) || he.Status != 500 {
		t.Errorf("broken: %v; want an HTTPError 500", err)
	}
	if _, err := ac.Trajectory(ctx, "empty"); err == nil {
		t.Error("empty: no error for an answer without a trajectory")
	}
}
