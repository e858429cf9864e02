package runner_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

// Bad input on the turn routes, the episode limit and the MCP endpoint,
// on a task with no env (fast).
func TestEpisodeServerBadInput(t *testing.T) {
	ctx := context.Background()
	docs, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer docs.Close()
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	svc := &runner.Services{Documents: docs}
	if _, err := r.CreateTask(ctx, docs, svc, "greet", []byte(`[
	 {"id":"agent","type":"deploy_agent"},
	 {"id":"ask","type":"prompt_agent","prompt_id":"hi","prompt":"Say hello.","poll_interval_seconds":0.01}]`), nil); err != nil {
		t.Fatal(err)
	}
	srv := runner.NewEpisodeServer(func(ctx context.Context, ref registry.Ref, o *runner.EpisodeOptions) (*runner.EpisodeSpec, error) {
		o.Documents = docs
		return r.LoadEpisodeSpec(ctx, docs, ref, svc, o)
	}, &runner.EpisodeServerOptions{MaxEpisodes: 1})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close(ctx)
	base := hs.URL

	if st, b := call(t, http.MethodPost, base+"/episodes", map[string]any{"task_id": "greet", "k": 2}); st != http.StatusBadRequest {
		t.Errorf("k above the limit: %d %v", st, b)
	}
	st, body := call(t, http.MethodPost, base+"/episodes", map[string]any{"task_id": "greet"})
	if st != http.StatusCreated {
		t.Fatalf("start: %d %v", st, body)
	}
	id := body["episodes"].([]any)[0].(map[string]any)["episode_id"].(string)
	if st, b := call(t, http.MethodPost, base+"/episodes", map[string]any{"task_id": "greet"}); st != http.StatusTooManyRequests {
		t.Errorf("second episode past MaxEpisodes: %d %v", st, b)
	}
	ep := base + "/episodes/" + id
	if st, b := call(t, http.MethodGet, ep+"/turns/next?wait_seconds=abc", nil); st != 400 || !strings.Contains(b["error"].(string), "wait_seconds") {
		t.Errorf("bad wait_seconds: %d %v", st, b)
	}
	if st, b := call(t, http.MethodPost, ep+"/turns/t9/end", map[string]any{"response": "x"}); st != 404 || b["code"] != "unknown_turn" {
		t.Errorf("unknown turn: %d %v", st, b)
	}
	if st, b := call(t, http.MethodGet, ep+"/result?wait_seconds=0", nil); st != http.StatusAccepted {
		t.Errorf("result while running: %d %v", st, b)
	}
	turn := nextTurn(t, base, id)
	end := ep + "/turns/" + turn["turn_id"].(string) + "/end"
	if st, b := call(t, http.MethodPost, end, map[string]any{}); st != 400 || !strings.Contains(b["error"].(string), "response") {
		t.Errorf("end without response: %d %v", st, b)
	}
	if st, b := call(t, http.MethodPost, end, map[string]any{"response": "x", "extra": 1}); st != 400 || !strings.Contains(b["error"].(string), "extra") {
		t.Errorf("end with an unknown field: %d %v", st, b)
	}
	if st, b := call(t, http.MethodPost, ep+"/turns/"+turn["turn_id"].(string)+"/mcp/nope", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}); st != 404 {
		t.Errorf("unknown MCP server: %d %v", st, b)
	}
	if st, b := call(t, http.MethodPost, end, map[string]any{"response": "hello"}); st != 200 {
		t.Fatalf("end: %d %v", st, b)
	}
	if st, b := call(t, http.MethodGet, ep+"/result?wait_seconds=30", nil); st != 200 || b["status"] != runner.StatusCompleted {
		t.Errorf("result: %d %v", st, b)
	}
	if st, b := call(t, http.MethodGet, ep, nil); st != 200 || b["status"] != "ended" {
		t.Errorf("status: %d %v", st, b)
	}
}
