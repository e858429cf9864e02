package agentsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/protocol"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

var _ = os.Stderr

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func echoAgent() agentsdk.Handler {
	return func(ctx context.Context, t *agentsdk.Task) (*agentsdk.Result, error) {
		return &agentsdk.Result{Parts: []protocol.Part{protocol.TextPart("echo: " + t.Text())},
			Usage: protocol.Usage{ToolCallCount: 1, InputTokens: 3, OutputTokens: 2, TotalTokens: 5}}, nil
	}
}

func start(t *testing.T, agent agentsdk.Agent) *agentsdktest.Agent {
	return agentsdktest.Start(t, &agentsdk.Card{Name: "test-agent", Description: "Tests", Version: "1.0.0"},
		&agentsdk.Options{Agent: agent, Logger: quiet()})
}

func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCardAtBothPathsAndHealth(t *testing.T) {
	a := start(t, echoAgent())
	for _, p := range []string{protocol.AgentCardPath, protocol.LegacyAgentCardPath} {
		c := getJSON(t, a.URL+p)
		if c["name"] != "test-agent" || c["url"] != "/a2a" || c["protocolVersion"] != "0.3.0" || c["preferredTransport"] != "JSONRPC" {
			t.Fatalf("%s: card %v", p, c)
		}
		if sk, ok := c["skills"].([]any); !ok || len(sk) != 0 {
			t.Fatalf("skills = %v", c["skills"])
		}
		caps := c["capabilities"].(map[string]any)
		if caps["streaming"] != false || caps["pushNotifications"] != false || caps["stateTransitionHistory"] != false {
			t.Fatalf("capabilities = %v", caps)
		}
		var uris []string
		for _, e := range caps["extensions"].([]any) {
			uris = append(uris, e.(map[string]any)["uri"].(string))
		}
		want := []string{protocol.URIMCPConfig, protocol.URIAgentConfig, protocol.URISkillConfig, protocol.URITrajectory, protocol.URIPeerAgents}
		if strings.Join(uris, ",") != strings.Join(want, ",") {
			t.Fatalf("extensions = %v", uris)
		}
	}
	if h := getJSON(t, a.URL+"/health"); h["status"] != "ok" {
		t.Fatalf("health = %v", h)
	}
}

func TestCardURLRules(t *testing.T) {
	h := echoAgent()
	for _, u := range []string{"a2a", "/a2a?x=1", "/a2a#f", "ftp://x/a2a", "/health", "/.well-known/agent.json", "http://host"} {
		if _, err := agentsdk.New(&agentsdk.Card{Name: "x", URL: u}, &agentsdk.Options{Agent: h}); err == nil {
			t.Errorf("url %q: want error", u)
		}
	}
	if _, err := agentsdk.New(&agentsdk.Card{Name: " "}, &agentsdk.Options{Agent: h}); err == nil {
		t.Error("empty name: want error")
	}
	if _, err := agentsdk.New(&agentsdk.Card{Name: "x"}, nil); err == nil {
		t.Error("no agent: want error")
	}
	// An absolute url is published verbatim while its path is mounted.
	a := agentsdktest.Start(t, &agentsdk.Card{Name: "abs", URL: "https://agents.example/team/rpc"}, &agentsdk.Options{Agent: h, Logger: quiet()})
	if c := getJSON(t, a.URL+protocol.LegacyAgentCardPath); c["url"] != "https://agents.example/team/rpc" {
		t.Fatalf("url = %v", c["url"])
	}
	a.Client.RPCPath = "/team/rpc"
	task, err := a.Client.Send(testCtx(t), "", "hi", true)
	if err != nil || task.Status.State != "completed" {
		t.Fatalf("send on mounted path: %+v %v", task, err)
	}
}

func TestBlockingSend(t *testing.T) {
	a := start(t, echoAgent())
	task, err := a.Client.Send(testCtx(t), "c1", "hello", true)
	if err != nil {
		t.Fatal(err)
	}
	if task.Kind != "task" || task.Status.State != "completed" || task.ContextID != "c1" || task.Text() != "echo: hello" {
		t.Fatalf("task = %+v", task)
	}
	parts := task.Status.Message.Parts
	if task.Status.Message.Role != "agent" || len(parts) != 2 {
		t.Fatalf("message = %+v", task.Status.Message)
	}
	if !sameJSON(parts[1].Data, `{"usage":{"tool_call_count":1,"input_tokens":3,"output_tokens":2,"total_tokens":5}}`) {
		t.Fatalf("usage part = %s", parts[1].Data)
	}
}

func TestNonBlockingSendIsSubmittedThenPolls(t *testing.T) {
	release := make(chan struct{})
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		<-release
		return agentsdk.Text("done"), nil
	}))
	ctx := testCtx(t)
	task, err := a.Client.Send(ctx, "", "go", false)
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != "submitted" || task.ID == "" || task.ContextID == "" {
		t.Fatalf("non-blocking answer = %+v", task)
	}
	working, err := a.Client.WaitFor(ctx, task.ID, func(t *agentsdktest.Task) bool { return t.Status.State == "working" })
	if err != nil {
		t.Fatal(err)
	}
	if working.Terminal() {
		t.Fatal("terminal before release")
	}
	close(release)
	final, err := a.Client.Wait(ctx, task.ID)
	if err != nil || final.Status.State != "completed" || final.Text() != "done" {
		t.Fatalf("final = %+v, %v", final, err)
	}
}

// sameJSON compares JSON values (a2a-go re-encodes data parts, so key
// order is not preserved).
func sameJSON(got json.RawMessage, want string) bool {
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return string(ab) == string(bb)
}

var corrRE = regexp.MustCompile(`^An unexpected framework error occurred\. Correlation ID: [0-9a-f]{32}$`)

func TestFailureShapes(t *testing.T) {
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		switch tk.Text() {
		case "expected":
			return nil, agentsdk.Fail("provider_rate_limited", "The model provider is temporarily unavailable")
		case "expected-parts":
			f := agentsdk.Fail("c", "m")
			f.Parts = []protocol.Part{protocol.TextPart("Retry later")}
			return nil, f
		case "panic":
			panic("secret internal detail")
		case "error":
			return nil, errors.New("secret internal detail")
		case "empty":
			return &agentsdk.Result{}, nil
		case "bad-kind":
			return &agentsdk.Result{Parts: []protocol.Part{{Kind: "video"}}}, nil
		case "bad-data":
			return &agentsdk.Result{Parts: []protocol.Part{protocol.DataPart([]byte(`[1]`))}}, nil
		case "bad-json":
			return &agentsdk.Result{Parts: []protocol.Part{protocol.TextPart("x")}, StructuredOutput: []byte(`{`)}, nil
		case "bad-trajectory":
			return &agentsdk.Result{Parts: []protocol.Part{protocol.TextPart("x")}, Trajectory: []byte(`nope`)}, nil
		}
		return nil, nil
	}))
	ctx := testCtx(t)
	check := func(text string) *agentsdktest.Task {
		t.Helper()
		task, err := a.Client.Send(ctx, "", text, true)
		if err != nil {
			t.Fatal(err)
		}
		if task.Status.State != "failed" {
			t.Fatalf("%s: state %s", text, task.Status.State)
		}
		return task
	}
	task := check("expected")
	parts := task.Status.Message.Parts
	if len(parts) != 2 || parts[0].Text != "The model provider is temporarily unavailable" ||
		!sameJSON(parts[1].Data, `{"error_type":"agent_error","error_code":"provider_rate_limited","error_message":"The model provider is temporarily unavailable"}`) {
		t.Fatalf("expected failure parts = %+v", parts)
	}
	task = check("expected-parts")
	if p := task.Status.Message.Parts; len(p) != 2 || p[0].Text != "Retry later" || task.Trailer().ErrorCode != "c" {
		t.Fatalf("parts = %+v", p)
	}
	for _, text := range []string{"panic", "error", "empty", "nil", "bad-kind", "bad-data", "bad-json", "bad-trajectory"} {
		task := check(text)
		raw, _ := json.Marshal(task)
		if strings.Contains(string(raw), "secret") {
			t.Fatalf("%s: leaked internals: %s", text, raw)
		}
		tr := task.Trailer()
		if tr.ErrorType != "infra_error" || tr.ErrorCode != "framework.unhandled_exception" || !corrRE.MatchString(tr.ErrorMessage) {
			t.Fatalf("%s: trailer %+v", text, tr)
		}
		if len(task.Status.Message.Parts) != 2 || task.Text() != tr.ErrorMessage {
			t.Fatalf("%s: parts %+v", text, task.Status.Message.Parts)
		}
	}
}

func TestBadMessagesAreInvalidParams(t *testing.T) {
	a := start(t, echoAgent())
	ctx := testCtx(t)
	text := func(s string) map[string]any {
		return map[string]any{"message": map[string]any{"messageId": "m1", "role": "user",
			"parts": []any{map[string]any{"kind": "text", "text": s}}}}
	}
	cases := map[string]any{
		"empty text":    text(""),
		"no message":    map[string]any{},
		"no parts":      map[string]any{"message": map[string]any{"messageId": "m", "role": "user", "parts": []any{}}},
		"bad kind":      map[string]any{"message": map[string]any{"messageId": "m", "role": "user", "parts": []any{map[string]any{"kind": "video"}}}},
		"bad data":      map[string]any{"message": map[string]any{"messageId": "m", "role": "user", "parts": []any{map[string]any{"kind": "data", "data": []int{1}}}}},
		"no id":         map[string]any{"message": map[string]any{"role": "user", "parts": []any{map[string]any{"kind": "text", "text": "x"}}}},
		"bad role":      map[string]any{"message": map[string]any{"messageId": "m", "role": "robot", "parts": []any{map[string]any{"kind": "text", "text": "x"}}}},
		"bad blocking":  map[string]any{"message": text("x")["message"], "configuration": map[string]any{"blocking": "yes"}},
		"params array":  []any{1},
		"message array": map[string]any{"message": []any{}},
	}
	for name, params := range cases {
		err := a.Client.Call(ctx, "message/send", params, nil)
		var rpcErr *agentsdktest.RPCError
		if !errors.As(err, &rpcErr) || rpcErr.Code != protocol.CodeInvalidParams {
			t.Errorf("%s: got %v, want -32602", name, err)
		}
	}
	err := a.Client.Call(ctx, "message/send", text(""), nil)
	if err == nil || !strings.Contains(err.Error(), "TextPart content cannot be empty") {
		t.Fatalf("empty text: %v", err)
	}
	var rpcErr *agentsdktest.RPCError
	if err := a.Client.Call(ctx, "message/stream", text("x"), nil); !errors.As(err, &rpcErr) || rpcErr.Code != -32004 {
		t.Fatalf("stream on non-streaming agent: %v", err)
	}
	if err := a.Client.Call(ctx, "nope/nope", map[string]any{}, nil); !errors.As(err, &rpcErr) || rpcErr.Code != protocol.CodeMethodNotFound {
		t.Fatalf("unknown method: %v", err)
	}
	if err := a.Client.Call(ctx, "tasks/get", map[string]any{"id": "missing"}, nil); !errors.As(err, &rpcErr) || rpcErr.Code != -32001 {
		t.Fatalf("unknown task: %v", err)
	}
	for _, params := range []any{map[string]any{"id": 5}, map[string]any{}, []any{}, map[string]any{"id": "x", "historyLength": "2"}} {
		if err := a.Client.Call(ctx, "tasks/get", params, nil); !errors.As(err, &rpcErr) || rpcErr.Code != protocol.CodeInvalidParams {
			t.Errorf("tasks/get %v: %v", params, err)
		}
	}
	if st, body, _ := a.Client.Ext(ctx, http.MethodPost, "/a2a", `[{"jsonrpc":"2.0"}]`); st != 200 || !strings.Contains(string(body), "-32600") {
		t.Fatalf("batch: %d %s", st, body)
	}
	if st, body, _ := a.Client.Ext(ctx, http.MethodPost, "/a2a", `{"jsonrpc":"1.0","id":1,"method":"tasks/get"}`); st != 200 || !strings.Contains(string(body), "-32600") {
		t.Fatalf("bad version: %d %s", st, body)
	}
	status, body, _ := a.Client.Ext(ctx, http.MethodPost, "/a2a", "{not json")
	if status != 200 || !strings.Contains(string(body), "-32700") {
		t.Fatalf("parse error: %d %s", status, body)
	}
}
