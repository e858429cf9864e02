package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// fuzzGateway is a started gateway with no backing servers, driven through
// its Handler without a socket (fuzzing needs many iterations per second).
func fuzzGateway(f *testing.F) *Gateway {
	g, err := New(&Config{MaxBodyBytes: 4096, TrajectoryFile: f.TempDir() + "/t.jsonl"}, testOptions())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { g.Close() })
	g.Start()
	waitFor(f, "started", func() bool { return g.started.Load() && g.reg.discovered() })
	return g
}

func checkControlAnswer(t *testing.T, route string, body []byte, rec *httptest.ResponseRecorder) {
	if rec.Code >= 500 {
		t.Fatalf("%s %q → %d %s", route, body, rec.Code, rec.Body.Bytes())
	}
	if !json.Valid(rec.Body.Bytes()) {
		t.Fatalf("%s %q → non-JSON answer %q", route, body, rec.Body.Bytes())
	}
	if rec.Code >= 400 {
		var e struct{ Error string }
		if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == "" {
			t.Fatalf("%s %q → %d without an error message: %s", route, body, rec.Code, rec.Body.Bytes())
		}
	}
}

// FuzzStepBody: any /step body gets a JSON answer below 500 (no backing
// servers, so a valid call is 403/404).
func FuzzStepBody(f *testing.F) {
	for _, s := range []string{`{"action":"list_tools"}`, `{"action":"call_tool","tool_name":"x","arguments":{}}`,
		`[]`, `null`, `"s"`, `1`, `{"action":null}`, `{"action":"call_tool","tool_name":"x","arguments":null}`, "\xff", ``} {
		f.Add([]byte(s))
	}
	g := fuzzGateway(f)
	h := g.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/step", bytes.NewReader(body)))
		checkControlAnswer(t, "/step", body, rec)
	})
}

// FuzzRoleRuleBody: any role-rule body gets a JSON answer below 500, and a
// 200 answer echoes the role it changed.
func FuzzRoleRuleBody(f *testing.F) {
	for _, s := range []string{`{"role":"r","tools":["a"]}`, `{"role":"*","tools":"*"}`, `{"role":"","tools":[]}`,
		`{"role":"r","tools":[null]}`, `[1]`, `{"role":{"a":1}}`, ``} {
		f.Add([]byte(s), true)
	}
	g := fuzzGateway(f)
	h := g.Handler()
	f.Fuzz(func(t *testing.T, body []byte, disable bool) {
		path := "/tools/enable"
		if disable {
			path = "/tools/disable"
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		checkControlAnswer(t, path, body, rec)
		if rec.Code == 200 {
			var resp struct{ Role string }
			var req struct{ Role string }
			json.Unmarshal(rec.Body.Bytes(), &resp)
			json.Unmarshal(body, &req)
			if resp.Role != req.Role {
				t.Fatalf("answer for role %q names %q", req.Role, resp.Role)
			}
		}
	})
}

// FuzzMCPBody: any POST /mcp body on a live session gets an answer below
// 500, and a JSON answer is valid JSON. The tools/list and tools/call
// envelope is decoded by the gateway itself (jsonscan), everything else by
// mcp-go.
func FuzzMCPBody(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{"a":1},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":3}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`,
		`[{"jsonrpc":"2.0","id":4,"method":"tools/list"},{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"2.0","id":5,"method":"ping"}`, `[]`, `{}`, `null`, `{"method":"tools/call","id":1,}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	g := fuzzGateway(f)
	h := g.Handler()
	post := func(sid string, body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	initResp := post("", []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}`))
	sid := initResp.Header().Get("Mcp-Session-Id")
	if initResp.Code != http.StatusOK || sid == "" {
		f.Fatalf("initialize: %d %s", initResp.Code, initResp.Body.Bytes())
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := post(sid, body)
		if rec.Code >= 500 {
			t.Fatalf("/mcp %q → %d %s", body, rec.Code, rec.Body.Bytes())
		}
		if rec.Header().Get("Content-Type") == "application/json" && rec.Body.Len() > 0 && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("/mcp %q → invalid JSON %q", body, rec.Body.Bytes())
		}
	})
}
