package triggers

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/gateway/vclock"
	"github.com/agentenv/agentenv/protocol"
)

type fixture struct {
	host  *testHost
	clock *vclock.Virtual
	eng   *Engine
	srv   *httptest.Server
}

func newFixture(t *testing.T, opts *Options) *fixture {
	t.Helper()
	f := &fixture{host: newTestHost(), clock: vclock.New(nil)}
	f.eng = New(f.host, f.clock, opts)
	mux := http.NewServeMux()
	NewHandler(f.eng, &HandlerOptions{MaxBodyBytes: 64 << 10}).Register(mux)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.srv.Close()
		f.eng.Close()
	})
	return f
}

func (f *fixture) post(t *testing.T, path, body string) (int, map[string]any) {
	t.Helper()
	resp, err := f.srv.Client().Post(f.srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("POST %s: %d %q", path, resp.StatusCode, b)
	}
	return resp.StatusCode, m
}

func (f *fixture) state(t *testing.T) *protocol.TriggersState {
	t.Helper()
	resp, err := f.srv.Client().Get(f.srv.URL + "/triggers/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st protocol.TriggersState
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// register registers through the engine directly (for synctest bubbles,
// which cannot host network servers) and fails the test on error.
func mustRegister(t *testing.T, e *Engine, body string) {
	t.Helper()
	if _, err := e.Register(context.Background(), []byte(body)); err != nil {
		t.Fatalf("register: %v", err)
	}
}

func statusOf(e *Engine, id string) protocol.TriggerStatus {
	for _, ts := range e.State().Triggers {
		if ts.ID == id {
			return ts
		}
	}
	return protocol.TriggerStatus{}
}

// eventsOf returns the decoded log events of one kind (all when kind is "").
func eventsOf(e *Engine, kind string) []map[string]any {
	var out []map[string]any
	for _, raw := range e.State().Events {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		if kind == "" || m["kind"] == kind {
			out = append(out, m)
		}
	}
	return out
}

// waitFor polls cond with a real-time deadline (never a fixed sleep).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-time.After(2 * time.Millisecond)
	}
}

func call(tool string, args, result string) ToolCall {
	res, _ := json.Marshal(map[string]any{"content": []map[string]any{{"type": "text", "text": result}}})
	return ToolCall{Role: "default", Tool: tool, Args: json.RawMessage(args), Result: res}
}
