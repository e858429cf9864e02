package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// call sends a JSON request with net/http and decodes the JSON answer.
func call(t *testing.T, method, url string, body any) (int, map[string]any) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

type headerRT struct {
	h    map[string]any
	next http.RoundTripper
}

func (r headerRT) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range r.h {
		req.Header.Set(k, v.(string))
	}
	return r.next.RoundTrip(req)
}

// mcpSession connects the go-sdk MCP client to a turn's first MCP server,
// with the headers the turn names.
func mcpSession(t *testing.T, turn map[string]any) *sdk.ClientSession {
	t.Helper()
	servers, _ := turn["mcp_servers"].([]any)
	if len(servers) != 1 {
		t.Fatalf("turn mcp_servers = %v", turn["mcp_servers"])
	}
	srv := servers[0].(map[string]any)
	headers, _ := srv["headers"].(map[string]any)
	if headers["AgentEnv-Role"] != "assistant" {
		t.Errorf("turn headers = %v, want the assistant role", headers)
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "trainer", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv["url"].(string),
		HTTPClient: &http.Client{Transport: headerRT{headers, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("mcp connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func mcpCall(cs *sdk.ClientSession, tool string, args json.RawMessage) (*sdk.CallToolResult, error) {
	var m map[string]any
	_ = json.Unmarshal(args, &m)
	return cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: m})
}

func nextTurn(t *testing.T, base, id string) map[string]any {
	t.Helper()
	for range 10 {
		st, body := call(t, http.MethodGet, base+"/episodes/"+id+"/turns/next?wait_seconds=30", nil)
		if st != http.StatusOK {
			t.Fatalf("next: %d %v", st, body)
		}
		if turn, ok := body["turn"].(map[string]any); ok {
			return turn
		}
		if body["done"] == true {
			t.Fatalf("episode %s ended without a turn: %v", id, body)
		}
	}
	t.Fatal("no turn")
	return nil
}

// testServerOverHTTP drives episodes with net/http and the go-sdk MCP
// client only, including k=2 and an abandon mid-turn.
func testServerOverHTTP(t *testing.T, f *envsteptest.Fixture, taskID string, want map[string]float64) {
	docs := f.Services.Documents
	srv := runner.NewEpisodeServer(func(ctx context.Context, ref registry.Ref, o *runner.EpisodeOptions) (*runner.EpisodeSpec, error) {
		o.Documents, o.Context = docs, onProcess
		return f.Runner.LoadEpisodeSpec(ctx, docs, ref, f.Services, o)
	}, nil)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close(context.Background())
	base := hs.URL

	// Bad input is refused naming the field, the task or the agent.
	for _, c := range []struct {
		body   any
		status int
		word   string
	}{
		{map[string]any{"task_id": "no-such-task"}, 404, "no-such-task"},
		{map[string]any{"task_id": taskID, "bogus": 1}, 400, "bogus"},
		{map[string]any{}, 400, "task_id"},
		{map[string]any{"task_id": taskID, "trainer_agents": []string{"nobody"}}, 400, "nobody"},
		{map[string]any{"task_id": taskID, "k": -1}, 400, "k"},
	} {
		st, body := call(t, http.MethodPost, base+"/episodes", c.body)
		if st != c.status || !strings.Contains(body["error"].(string), c.word) {
			t.Errorf("POST %v: %d %v, want %d naming %s", c.body, st, body, c.status, c.word)
		}
	}
	if st, _ := call(t, http.MethodGet, base+"/episodes/ep-nope/turns/next", nil); st != 404 {
		t.Errorf("unknown episode: %d", st)
	}

	// k=2: two episodes of the task, each played over HTTP and MCP.
	st, body := call(t, http.MethodPost, base+"/episodes", map[string]any{"task_id": taskID, "k": 2})
	if st != http.StatusCreated {
		t.Fatalf("start: %d %v", st, body)
	}
	eps := body["episodes"].([]any)
	if len(eps) != 2 {
		t.Fatalf("episodes = %v", eps)
	}
	for _, e := range eps {
		id := e.(map[string]any)["episode_id"].(string)
		turn := nextTurn(t, base, id)
		if turn["prompt_id"] != "q3" || turn["agent_name"] != "default-agent" {
			t.Errorf("turn = %v", turn)
		}
		cs := mcpSession(t, turn)
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(tools.Tools) == 0 {
			t.Fatalf("tools/list: %v", err)
		}
		for _, c := range q3Calls {
			res, err := mcpCall(cs, c.tool, c.args)
			if err != nil || res.IsError {
				t.Fatalf("%s: %v %+v", c.tool, err, res)
			}
		}
		endURL := base + "/episodes/" + id + "/turns/" + turn["turn_id"].(string) + "/end"
		if st, b := call(t, http.MethodPost, endURL, map[string]any{"response": q3Reply}); st != 200 || b["tool_call_count"] != float64(3) {
			t.Fatalf("end: %d %v", st, b)
		}
		if st, b := call(t, http.MethodPost, endURL, map[string]any{"response": "again"}); st != http.StatusConflict || b["code"] != "turn_ended" {
			t.Errorf("second end: %d %v", st, b)
		}
		if st, b := call(t, http.MethodGet, base+"/episodes/"+id+"/turns/next?wait_seconds=60", nil); st != 200 || b["done"] != true {
			t.Errorf("after the last turn: %d %v", st, b)
		}
		st, res := call(t, http.MethodGet, base+"/episodes/"+id+"/result?wait_seconds=60", nil)
		if st != 200 || res["status"] != runner.StatusCompleted {
			t.Fatalf("result: %d %v", st, res)
		}
		scores := res["scores"].(map[string]any)
		for step, s := range want {
			if scores[step] != s {
				t.Errorf("score %s = %v, scripted %v", step, scores[step], s)
			}
		}
		// The result explains each score with the verifier's rows.
		for _, v := range res["verifications"].([]any) {
			rows, _ := v.(map[string]any)["results"].([]any)
			if len(rows) == 0 || rows[0].(map[string]any)["justification"] == nil {
				t.Errorf("verification without rows: %v", v)
			}
		}
	}

	// Abandon mid-turn: the run stops, everything is torn down, the turn
	// and its MCP endpoint refuse further use.
	st, body = call(t, http.MethodPost, base+"/episodes", map[string]any{"task_id": taskID})
	if st != http.StatusCreated {
		t.Fatalf("start: %d %v", st, body)
	}
	id := body["episodes"].([]any)[0].(map[string]any)["episode_id"].(string)
	turn := nextTurn(t, base, id)
	cs := mcpSession(t, turn)
	if _, err := mcpCall(cs, q3Calls[0].tool, q3Calls[0].args); err != nil {
		t.Fatal(err)
	}
	st, body = call(t, http.MethodPost, base+"/episodes/"+id+"/abandon", map[string]any{"reason": "trainer stopped"})
	if st != 200 {
		t.Fatalf("abandon: %d %v", st, body)
	}
	res := body["result"].(map[string]any)
	if res["status"] != runner.StatusCancelled || res["abandoned"] != "trainer stopped" {
		t.Errorf("abandoned result = %v", res)
	}
	endURL := base + "/episodes/" + id + "/turns/" + turn["turn_id"].(string) + "/end"
	if st, b := call(t, http.MethodPost, endURL, map[string]any{"response": "late"}); st != http.StatusConflict {
		t.Errorf("end after abandon: %d %v", st, b)
	}
	if _, err := mcpCall(cs, q3Calls[1].tool, q3Calls[1].args); err == nil {
		t.Error("a tool call after abandon succeeded")
	}
	inst, err := runner.GetInstance(context.Background(), docs, res["instance_id"].(string))
	if err != nil || inst.Status != runner.StatusCancelled || inst.Error == nil || !strings.Contains(*inst.Error, "trainer stopped") {
		t.Fatalf("instance: %v %+v", err, inst)
	}
	envInstancesTornDown(t, f, inst.Context)
	if n := srv.Live(); n != 0 {
		t.Errorf("%d episodes still live", n)
	}
}

// A client that disappears: its turn times out and the episode ends
// abandoned and torn down.
func testServerClientDisappears(t *testing.T, f *envsteptest.Fixture, taskID string) {
	docs := f.Services.Documents
	srv := runner.NewEpisodeServer(func(ctx context.Context, ref registry.Ref, o *runner.EpisodeOptions) (*runner.EpisodeSpec, error) {
		o.Documents, o.Context = docs, onProcess
		return f.Runner.LoadEpisodeSpec(ctx, docs, ref, f.Services, o)
	}, nil)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close(context.Background())
	st, body := call(t, http.MethodPost, hs.URL+"/episodes", map[string]any{"task_id": taskID, "turn_timeout_seconds": 1})
	if st != http.StatusCreated {
		t.Fatalf("start: %d %v", st, body)
	}
	id := body["episodes"].([]any)[0].(map[string]any)["episode_id"].(string)
	// The client never polls again.
	st, res := call(t, http.MethodGet, hs.URL+"/episodes/"+id+"/result?wait_seconds=60", nil)
	if st != 200 || res["status"] != runner.StatusCancelled || !strings.Contains(res["abandoned"].(string), "timed out") {
		t.Fatalf("result: %d %v", st, res)
	}
	if l, _ := res["timed_out_turns"].([]any); len(l) != 1 {
		t.Errorf("timed_out_turns = %v", res["timed_out_turns"])
	}
	inst, err := runner.GetInstance(context.Background(), docs, res["instance_id"].(string))
	if err != nil || inst.Status != runner.StatusCancelled {
		t.Fatalf("instance: %v %+v", err, inst)
	}
	envInstancesTornDown(t, f, inst.Context)
}

// TurnTimeout on the Go API: the turn fails with turn_timeout, End is
// refused, the run goes on to its verifiers and is torn down.
func testTurnTimeout(t *testing.T, f *envsteptest.Fixture, taskID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	ep, err := episodeSpec(t, f, taskID, &runner.EpisodeOptions{TurnTimeout: time.Second}).Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := ep.NextTurn(ctx)
	if err != nil || turn == nil {
		t.Fatalf("turn: %v %v", turn, err)
	}
	res, err := ep.Result(ctx) // the trainer never ends the turn
	if err != nil {
		t.Fatal(err)
	}
	if err := turn.End(ctx, "too late"); !errors.Is(err, runner.ErrTurnTimedOut) {
		t.Errorf("End after the deadline: %v, want ErrTurnTimedOut", err)
	}
	if _, err := turn.Tools(ctx); !errors.Is(err, runner.ErrTurnTimedOut) {
		t.Errorf("Tools after the deadline: %v", err)
	}
	if res.Status != runner.StatusCompleted || len(res.TimedOutTurns) != 1 || res.TimedOutTurns[0] != turn.ID || res.Abandoned != "" {
		t.Fatalf("result = %+v", res)
	}
	for step, s := range res.Scores {
		if s != 0 {
			t.Errorf("score %s = %v after a timed-out turn", step, s)
		}
	}
	inst, err := runner.GetInstance(ctx, f.Services.Documents, ep.InstanceID())
	if err != nil || inst.Status != runner.StatusCompleted {
		t.Fatalf("instance: %v %+v", err, inst)
	}
	pr := inst.Context[runner.KeyPromptResponses].([]any)[0].(map[string]any)
	if pr["error_code"] != "turn_timeout" {
		t.Errorf("prompt response = %v", pr)
	}
	envInstancesTornDown(t, f, inst.Context)
}
