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
