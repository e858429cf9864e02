package agentsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/protocol"
)

func ext(t *testing.T, a *agentsdktest.Agent, method, path string, body any) (int, string) {
	t.Helper()
	status, raw, err := a.Client.Ext(context.Background(), method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, string(raw)
}

func cardExtension(t *testing.T, a *agentsdktest.Agent, uri string) map[string]any {
	t.Helper()
	c := getJSON(t, a.URL+protocol.LegacyAgentCardPath)
	for _, e := range c["capabilities"].(map[string]any)["extensions"].([]any) {
		if m := e.(map[string]any); m["uri"] == uri {
			return m
		}
	}
	t.Fatalf("extension %s not on card", uri)
	return nil
}

func TestMCPConfig(t *testing.T) {
	var seen map[string]agentsdk.MCPServer
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		seen = tk.MCPServers
		return agentsdk.Text("ok"), nil
	}))
	e := cardExtension(t, a, protocol.URIMCPConfig)
	params := e["params"].(map[string]any)
	add := params["methods"].(map[string]any)["add"].(map[string]any)
	if params["endpoint"] != "/ext/mcp-config" || add["method"] != "POST" ||
		!sameJSON(mustJSON(add["request"]), `{"required":["url"],"optional":["headers","name"]}`) {
		t.Fatalf("card entry = %v", e)
	}
	st, body := ext(t, a, "POST", "/ext/mcp-config", map[string]any{"url": " http://env/mcp ", "headers": map[string]string{"Authorization": "Bearer s3cret"}})
	if st != 200 || !regexp.MustCompile(`^\{"status":"added","name":"mcp_[0-9a-f]{8}","url":"http://env/mcp"\}$`).MatchString(body) {
		t.Fatalf("add auto name: %d %s", st, body)
	}
	if st, body := ext(t, a, "POST", "/ext/mcp-config", map[string]any{"url": "http://other/mcp", "name": "env2"}); st != 200 || !strings.Contains(body, `"name":"env2"`) {
		t.Fatalf("add named: %d %s", st, body)
	}
	for _, c := range []struct {
		body   any
		status int
	}{
		{map[string]any{"url": "http://env/mcp"}, 409},
		{map[string]any{"url": "http://third/mcp", "name": "env2"}, 409},
		{map[string]any{"url": "  "}, 400},
		{map[string]any{"url": "http://x", "extra": true}, 400},
		{"not json", 400},
		{map[string]any{"url": "http://x", "headers": map[string]any{"Authorization": 7}}, 400},
	} {
		st, body := ext(t, a, "POST", "/ext/mcp-config", c.body)
		if st != c.status || strings.Contains(body, "s3cret") {
			t.Errorf("%v: %d %s, want %d", c.body, st, body, c.status)
		}
	}
	st, body = ext(t, a, "GET", "/ext/mcp-config", nil)
	if st != 200 || strings.Contains(body, "s3cret") || !strings.Contains(body, `"has_headers":true`) || !strings.Contains(body, `"env2":{"url":"http://other/mcp","has_headers":false}`) {
		t.Fatalf("list: %d %s", st, body)
	}
	if st, _ := ext(t, a, "GET", "/ext/mcp-config?x=1", nil); st != 400 {
		t.Fatalf("list with fields: %d", st)
	}
	if _, err := a.Client.Send(testCtx(t), "", "x", true); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen["env2"].URL != "http://other/mcp" {
		t.Fatalf("task saw %v", seen)
	}
}

type cfgAgent struct{ got chan toolCfg }

type toolCfg struct {
	Model        string `json:"model"`
	SystemPrompt string `json:"system_prompt,omitempty"`
	BaseURL      string `json:"base_url,omitempty"`
	APIKey       string `json:"api_key,omitempty" agentenv:"writeonly"`
	MaxTurns     int    `json:"max_turns"`
}

func (c *toolCfg) Validate() error {
	if c.MaxTurns < 1 || c.MaxTurns > 50 {
		return errors.New("max_turns: must be from 1 to 50")
	}
	return nil
}

func (a cfgAgent) ConfigDefaults() any { return &toolCfg{Model: "default-model", MaxTurns: 8} }

func (a cfgAgent) Run(ctx context.Context, t *agentsdk.Task) (*agentsdk.Result, error) {
	var c toolCfg
	if err := t.Config(&c); err != nil {
		return nil, err
	}
	a.got <- c
	return agentsdk.Text("role=" + t.Role + " meta=" + toString(t.Metadata["role"])), nil
}

func toString(v any) string { s, _ := v.(string); return s }

func TestAgentConfig(t *testing.T) {
	got := make(chan toolCfg, 4)
	a := start(t, cfgAgent{got})
	e := cardExtension(t, a, protocol.URIAgentConfig)
	set := e["params"].(map[string]any)["methods"].(map[string]any)["set"].(map[string]any)
	req := set["request"].(map[string]any)
	var supported []string
	for _, s := range req["supported"].([]any) {
		supported = append(supported, s.(string))
	}
	want := []string{"api_key", "base_url", "description", "max_turns", "model", "name", "role", "system_prompt", "timeout_seconds"}
	if !slices.Equal(supported, want) {
		t.Fatalf("supported = %v", supported)
	}
	schema, _ := json.Marshal(req["schema"])
	if !strings.Contains(string(schema), `"api_key":{"type":"string","writeOnly":true}`) || strings.Contains(string(schema), "default-model") {
		t.Fatalf("schema = %s", schema)
	}
	if st, body := ext(t, a, "GET", "/ext/agent-config", nil); st != 200 || body != `{"config":{}}` {
		t.Fatalf("get before set (defaults never published): %d %s", st, body)
	}
	if st, body := ext(t, a, "POST", "/ext/agent-config", map[string]any{"model": "m2", "api_key": "sk-s3cret", "role": "solver"}); st != 200 || body != `{"status":"updated"}` {
		t.Fatalf("set: %d %s", st, body)
	}
	st, body := ext(t, a, "GET", "/ext/agent-config", nil)
	if st != 200 || strings.Contains(body, "s3cret") || !sameJSON(json.RawMessage(body), `{"config":{"model":"m2","api_key":"***","role":"solver"}}`) {
		t.Fatalf("get: %d %s", st, body)
	}
	for name, b := range map[string]any{
		"unknown field":    map[string]any{"temperature": 1},
		"bad type":         map[string]any{"model": 5},
		"validate":         map[string]any{"max_turns": 500, "api_key": "sk-other-s3cret"},
		"empty name":       map[string]any{"name": ""},
		"null description": map[string]any{"description": nil},
		"bad timeout":      map[string]any{"timeout_seconds": "10"},
		"zero timeout":     map[string]any{"timeout_seconds": 0},
		"huge timeout":     map[string]any{"timeout_seconds": 1 << 62},
		"not an object":    []int{1},
		"role number":      map[string]any{"role": 3},
	} {
		st, body := ext(t, a, "POST", "/ext/agent-config", b)
		if st != 400 || strings.Contains(body, "s3cret") || body == "" {
			t.Errorf("%s: %d %q", name, st, body)
		}
	}
	// All or nothing: the invalid max_turns above did not store its api key.
	if _, err := a.Client.Send(testCtx(t), "", "x", true); err != nil {
		t.Fatal(err)
	}
	c := <-got
	if c.Model != "m2" || c.APIKey != "sk-s3cret" || c.MaxTurns != 8 {
		t.Fatalf("task config = %+v", c)
	}
	// name/description update the live card.
	if st, _ := ext(t, a, "POST", "/ext/agent-config", map[string]any{"name": "renamed", "description": "New"}); st != 200 {
		t.Fatal(st)
	}
	card := getJSON(t, a.URL+protocol.AgentCardPath)
	if card["name"] != "renamed" || card["description"] != "New" {
		t.Fatalf("card = %v %v", card["name"], card["description"])
	}
	task, err := a.Client.Send(testCtx(t), "", "x", true)
	<-got
	if err != nil || task.Text() != "role=solver meta=solver" {
		t.Fatalf("role: %+v %v", task, err)
	}
}

func TestAgentConfigReadbackDisabled(t *testing.T) {
	a := agentsdktest.Start(t, &agentsdk.Card{Name: "x"}, &agentsdk.Options{Agent: echoAgent(), DisableConfigReadback: true, Logger: quiet()})
	if st, _ := ext(t, a, "GET", "/ext/agent-config", nil); st != 405 {
		t.Fatalf("get: %d", st)
	}
	m := cardExtension(t, a, protocol.URIAgentConfig)["params"].(map[string]any)["methods"].(map[string]any)
	if _, ok := m["get"]; ok {
		t.Fatal("get advertised while disabled")
	}
}

func TestTrajectory(t *testing.T) {
	release := make(chan struct{})
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		if err := tk.Trajectory.SetFormat("test-events/v1"); err != nil {
			return nil, err
		}
		for i := range 3 {
			if err := tk.Trajectory.Append(map[string]any{"type": "step", "i": i, "text": tk.Text()}); err != nil {
				return nil, err
			}
		}
		if err := tk.Trajectory.Append([]int{1}); err == nil {
			return nil, errors.New("non-object event accepted")
		}
		switch tk.Text() {
		case "block":
			<-release
		case "fail":
			return nil, errors.New("boom")
		case "native":
			return &agentsdk.Result{Parts: []protocol.Part{protocol.TextPart("n")}, Trajectory: json.RawMessage(`{"native":true}`)}, nil
		}
		return agentsdk.Text("ok"), nil
	}))
	ctx := testCtx(t)
	e := cardExtension(t, a, protocol.URITrajectory)
	getOp := e["params"].(map[string]any)["methods"].(map[string]any)["get"].(map[string]any)
	if oneOf := getOp["request"].(map[string]any)["oneOf"].([]any); len(oneOf) != 4 {
		t.Fatalf("oneOf = %v", oneOf)
	}
	run, err := a.Client.Send(ctx, "ctx1", "block", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Client.WaitFor(ctx, run.ID, func(t *agentsdktest.Task) bool { return t.Status.State == "working" }); err != nil {
		t.Fatal(err)
	}
	var page protocol.TrajectoryEventsResponse
	for page.Next < 3 { // follow the running task by cursor
		st, body := ext(t, a, "POST", "/ext/trajectory", map[string]any{"task_id": run.ID, "after": 0})
		if st != 200 {
			t.Fatalf("cursor: %d %s", st, body)
		}
		page = protocol.TrajectoryEventsResponse{}
		_ = json.Unmarshal([]byte(body), &page)
	}
	if page.State != "running" || page.Format != "test-events/v1" || page.TaskID != run.ID || page.ContextID != "ctx1" || page.HasMore {
		t.Fatalf("page = %+v", page)
	}
	if st, _ := ext(t, a, "POST", "/ext/trajectory", map[string]any{"task_id": run.ID}); st != 404 {
		t.Fatalf("whole read before the end: %d", st)
	}
	st, body := ext(t, a, "POST", "/ext/trajectory", map[string]any{"task_id": run.ID, "after": 1, "limit": 1})
	if st != 200 || !strings.Contains(body, `"next":2`) || !strings.Contains(body, `"has_more":true`) || !strings.Contains(body, `"i":1`) {
		t.Fatalf("limit page: %d %s", st, body)
	}
	for _, b := range []map[string]any{
		{"task_id": run.ID, "after": true}, {"task_id": run.ID, "after": "0"}, {"task_id": run.ID, "after": -1},
		{"task_id": run.ID, "after": 0, "limit": 0}, {"task_id": run.ID, "after": 0, "limit": 1001},
		{"task_id": run.ID, "after": 4}, {"task_id": run.ID, "objects": map[string]any{}}, {"task_id": run.ID, "x": 1},
	} {
		if st, body := ext(t, a, "POST", "/ext/trajectory", b); st != 400 {
			t.Errorf("%v: %d %s", b, st, body)
		}
	}
	if st, _ := ext(t, a, "POST", "/ext/trajectory", map[string]any{"task_id": "nope"}); st != 404 {
		t.Fatalf("unknown task: %d", st)
	}
	if st, _ := ext(t, a, "POST", "/ext/trajectory", map[string]any{"context_id": "nope"}); st != 404 {
		t.Fatalf("unknown context: %d", st)
	}
	close(release)
	if _, err := a.Client.Wait(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	st, body = ext(t, a, "POST", "/ext/trajectory", map[string]any{"task_id": run.ID})
	if st != 200 || !strings.HasPrefix(body, `{"trajectory":[{"i":0,"text":"block","type":"step"}`) {
		t.Fatalf("whole read: %d %s", st, body)
	}
	// A failing task keeps its events, state failed.
	failed, _ := a.Client.Send(ctx, "ctx1", "fail", true)
	st, body = ext(t, a, "POST", "/ext/trajectory", map[string]any{"task_id": failed.ID, "after": 0})
	if st != 200 || !strings.Contains(body, `"state":"failed"`) || !strings.Contains(body, `"text":"fail"`) {
		t.Fatalf("failed task: %d %s", st, body)
	}
	// Native trajectory wins for whole reads; cursor reads show live events.
	native, _ := a.Client.Send(ctx, "ctx1", "native", true)
	if st, body := ext(t, a, "POST", "/ext/trajectory", map[string]any{"task_id": native.ID}); st != 200 || body != `{"trajectory":{"native":true}}` {
		t.Fatalf("native: %d %s", st, body)
	}
	if st, body := ext(t, a, "POST", "/ext/trajectory", map[string]any{"task_id": native.ID, "after": 0}); st != 200 || !strings.Contains(body, `"text":"native"`) {
		t.Fatalf("native cursor: %d %s", st, body)
	}
	// Context reads concatenate the tasks in start order.
	st, body = ext(t, a, "POST", "/ext/trajectory", map[string]any{"context_id": "ctx1", "after": 0})
	var cp protocol.TrajectoryEventsResponse
	_ = json.Unmarshal([]byte(body), &cp)
	if st != 200 || len(cp.Events) != 9 || cp.Next != 9 || cp.HasMore || cp.State != "completed" || cp.TaskID != native.ID {
		t.Fatalf("context cursor: %d %+v", st, cp)
	}
	st, body = ext(t, a, "POST", "/ext/trajectory", map[string]any{"context_id": "ctx1"})
	var whole struct{ Trajectory []json.RawMessage }
	_ = json.Unmarshal([]byte(body), &whole)
	if st != 200 || len(whole.Trajectory) != 9 {
		t.Fatalf("context whole: %d %s", st, body)
	}
}

func TestPeerAgents(t *testing.T) {
	peer := agentsdktest.Start(t, &agentsdk.Card{Name: "peer"}, &agentsdk.Options{Logger: quiet(),
		Agent: agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
			return agentsdk.Text("peer got " + tk.Text()), nil
		})})
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		if _, err := tk.AskPeer(ctx, "ghost", "", "x"); !errors.Is(err, agentsdk.ErrUnknownPeer) {
			return nil, errors.New("unknown peer accepted")
		}
		r, err := tk.AskPeer(ctx, "helper", "", "question")
		if err != nil {
			return nil, err
		}
		return agentsdk.Text(r.State + ": " + r.Text()), nil
	}))
	peerCard := getJSON(t, peer.URL+protocol.LegacyAgentCardPath)
	set := map[string]any{"peers": []any{map[string]any{"name": "helper", "url": peer.URL, "card": peerCard, "description": "Helps"}}}
	if st, body := ext(t, a, "POST", "/ext/peer-agents", set); st != 200 || body != `{"status":"updated"}` {
		t.Fatalf("set: %d %s", st, body)
	}
	if st, body := ext(t, a, "GET", "/ext/peer-agents", nil); st != 200 || !strings.Contains(body, `"name":"helper"`) || !strings.Contains(body, `"description":"Helps"`) {
		t.Fatalf("list: %d %s", st, body)
	}
	for _, b := range []any{
		map[string]any{"peers": []any{map[string]any{"name": "x", "url": "http://x", "extra": 1}}},
		map[string]any{"peers": []any{map[string]any{"name": "", "url": "http://x"}}},
		map[string]any{}, map[string]any{"peers": []any{}, "more": 1},
	} {
		if st, _ := ext(t, a, "POST", "/ext/peer-agents", b); st != 400 {
			t.Errorf("%v: %d", b, st)
		}
	}
	task, err := a.Client.Send(testCtx(t), "", "delegate", true)
	if err != nil || task.Text() != "completed: peer got question" {
		t.Fatalf("delegation: %+v %v", task, err)
	}
}

func TestExtensionHeaderPassthrough(t *testing.T) {
	got := make(chan string, 1)
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		got <- tk.Header.Get("agentenv-role") + "|" + tk.Header.Get(protocol.HeaderA2AExtensions)
		return agentsdk.Text("ok"), nil
	}))
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": agentsdktest.SendParams("", "hi", true)})
	req, _ := http.NewRequest("POST", a.URL+"/a2a", strings.NewReader(string(body)))
	req.Header.Set("AgentEnv-Role", "solver")
	req.Header.Set("X-A2A-Extensions", protocol.URITrajectory+", urn:example:unknown/v1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := resp.Header.Get("X-A2A-Extensions"); h != protocol.URITrajectory {
		t.Fatalf("activated extensions header = %q", h)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type = %q", ct)
	}
	if g := <-got; g != "solver|"+protocol.URITrajectory+", urn:example:unknown/v1" {
		t.Fatalf("agent saw %q", g)
	}
}

func TestExtensionErrorsArePlainText(t *testing.T) {
	a := start(t, echoAgent())
	resp, err := http.Post(a.URL+"/ext/mcp-config", "application/json", strings.NewReader(`{"url":""}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func mustJSON(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
