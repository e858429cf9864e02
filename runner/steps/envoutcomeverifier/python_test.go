package envoutcomeverifier

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// needPython skips without python3, except under CI=true.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 is required under CI=true: %v", err)
		}
		t.Skipf("python3 not found on PATH, so reference-style verifiers cannot run: %v", err)
	}
}

// fakeEnv serves the data plane at /agentenv (data/get answers state,
// data/reset and data/add record what they got) and MCP at /mcp over a
// loopback socket.
type fakeEnv struct {
	*httptest.Server
	mu    sync.Mutex
	calls []string
}

func (f *fakeEnv) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeEnv) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func newFakeEnv(t *testing.T, state string) *fakeEnv { return newFakeEnvWrapped(t, state, nil) }

// newFakeEnvWrapped is newFakeEnv with its handler wrapped by wrap.
func newFakeEnvWrapped(t *testing.T, state string, wrap func(http.Handler) http.Handler) *fakeEnv {
	f := &fakeEnv{}
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     any             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if r.Method == http.MethodDelete {
			return
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.record(r.URL.Path + " " + req.Method + " " + string(req.Params))
		w.Header().Set("Content-Type", "application/json")
		var result any
		switch r.URL.Path + " " + req.Method {
		case "/agentenv data/get":
			result = map[string]any{"parts": []any{map[string]any{"kind": "data", "data": json.RawMessage(state)}}}
		case "/agentenv data/reset", "/agentenv data/add":
			result = map[string]any{}
		case "/mcp initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "fake"}}
		case "/mcp notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
			return
		case "/mcp tools/call":
			if r.Header.Get("Mcp-Session-Id") != "s1" {
				http.Error(w, "no session", http.StatusBadRequest)
				return
			}
			// Answer as an event stream, as streamable HTTP servers may.
			w.Header().Set("Content-Type", "text/event-stream")
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
				"content": []any{map[string]any{"type": "text", "text": "echo " + string(req.Params)}}}})
			_, _ = w.Write([]byte("event: message\ndata: " + string(b) + "\n\n"))
			return
		default:
			http.Error(w, "unexpected "+req.Method, http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	})
	if wrap != nil {
		h = wrap(h)
	}
	f.Server = httptest.NewServer(h)
	t.Cleanup(f.Close)
	return f
}

func runRef(t *testing.T, url, src string) ([]map[string]any, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "verifier.py")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	rows, err := runReference(context.Background(), dir, path, url+"/mcp", fileAuth{})
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out, err
}

// TestReferenceClient: the shipped agentenv_protocol client reads the
// export, resets and adds data, and calls a tool over MCP (an event-stream
// answer, with the session id kept); a sync verify works too.
func TestReferenceClient(t *testing.T) {
	needPython(t)
	env := newFakeEnv(t, `{"done":true}`)
	rows, err := runRef(t, env.URL, `
from agentenv_protocol import client
from agentenv_protocol.types import DataPart

async def verify(mcp_url):
    base = mcp_url.removesuffix("/mcp")
    await client.reset_data(base)
    await client.add_data(base, [DataPart(data={"x": 1}), {"kind": "text", "text": "t"}])
    state = (await client.get_data(base)).parts[0].data
    res = await client.call_tool(mcp_url, "echo", {"a": 1})
    return [{"criterion": "done", "result": state["done"]}, {"id": "tool", "result": not res.isError, "text": res.text}]
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0]["result"] != true || rows[1]["text"] != `echo {"name":"echo","arguments":{"a":1}}` {
		t.Errorf("rows %v", rows)
	}
	want := `/agentenv data/add {"parts":[{"kind":"data","data":{"x":1}},{"kind":"text","text":"t"}]}`
	if calls := strings.Join(env.recorded(), "\n"); !strings.Contains(calls, want) {
		t.Errorf("calls:\n%s\nwant %s", calls, want)
	}
	rows, err = runRef(t, env.URL, "def verify(mcp_url):\n    return [{'result': mcp_url.endswith('/mcp'), 'score': 1}]\n")
	if err != nil || len(rows) != 1 || rows[0]["result"] != true {
		t.Errorf("sync verify: %v %v", rows, err)
	}
}

// TestReferenceErrors: each failure says what went wrong: a verify that
// raises (its exception's last line), rows of the wrong shape, a module
// that fails to import, a module without verify.
func TestReferenceErrors(t *testing.T) {
	needPython(t)
	env := newFakeEnv(t, `{}`)
	for name, tc := range map[string]struct{ src, want string }{
		"raises":     {"async def verify(mcp_url):\n    raise ValueError('the inbox is empty')\n", "verify(mcp_url) raised ValueError: the inbox is empty"},
		"not a list": {"def verify(mcp_url):\n    return {'result': True}\n", "verify returned dict, want a list of dicts"},
		"not dicts":  {"def verify(mcp_url):\n    return ['ok']\n", "row 0 is str, want a dict"},
		"no result":  {"def verify(mcp_url):\n    return [{'criterion': 'x'}]\n", `row 0 has neither "result" nor a numeric "score"`},
		"bad score":  {"def verify(mcp_url):\n    return [{'result': True, 'score': 'high'}]\n", `row 0: "score" is a string, want a number`},
		"import":     {"import no_such_module\nasync def verify(mcp_url):\n    return []\n", "importing the file raised ModuleNotFoundError: No module named 'no_such_module'"},
		"no verify":  {"if False:\n    pass\nverify = None\n", "the module defines no verify(mcp_url) function"},
		"data/get":   {"from agentenv_protocol import client\nasync def verify(mcp_url):\n    await client.get_data(mcp_url)\n", "HTTP 404"},
	} {
		_, err := runRef(t, env.URL, tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
		if name == "not a list" && !errors.Is(err, errRowShape) {
			t.Errorf("%s: %v is not errRowShape", name, err)
		}
	}
}

// TestContractChoice: the contract follows what the file is.
func TestContractChoice(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		ref        bool
	}{
		{"v.py", "async def verify(mcp_url):\n    return []\n", true},
		{"v.py", "def verify(mcp_url):\n    return []\n", true},
		{"verifier", "#!/usr/bin/env python3\ndef verify(u):\n    return []\n", true},
		{"v.py", "from mylib.checks import verify\n", true},
		{"v.py", "import json\nprint(json.dumps([{'result': True}]))\n", false},
		{"verify.sh", "#!/bin/sh\n# def verify(\necho '[]'\n", false},
		{"v.py", "class X:\n    def verify(self, u):\n        pass\n", false},
	} {
		if got, why := isReference(tc.name, []byte(tc.body)); got != tc.ref {
			t.Errorf("%s %q: reference %v (%s), want %v", tc.name, tc.body, got, why, tc.ref)
		}
	}
}

// TestReferenceCredentials: the shipped client sends the control token on
// the data plane and the verifier role's credential on MCP, to the env's
// origin only: another host gets neither, and a redirect is not followed.
func TestReferenceCredentials(t *testing.T) {
	needPython(t)
	other := &fakeEnv{}
	otherSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.record(r.URL.Path + " auth=" + r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"parts":[]}}`))
	}))
	defer otherSrv.Close()
	seen := &fakeEnv{}
	env := newFakeEnvWrapped(t, `{}`, func(inner http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.record(r.Method + " " + r.URL.Path + " auth=" + r.Header.Get("Authorization"))
			if r.URL.Path == "/redirect/agentenv" {
				http.Redirect(w, r, otherSrv.URL+"/agentenv", http.StatusTemporaryRedirect)
				return
			}
			inner.ServeHTTP(w, r)
		})
	})
	dir := t.TempDir()
	path := filepath.Join(dir, "verifier.py")
	src := `
from agentenv_protocol import client

async def verify(mcp_url):
    base = mcp_url.removesuffix("/mcp")
    await client.get_data(base)
    await client.call_tool(mcp_url, "echo", {})
    await client.get_data("` + otherSrv.URL + `")
    try:
        await client.get_data(base + "/redirect")
        followed = True
    except Exception:
        followed = False
    return [{"result": not followed}]
`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	rows, err := runReference(context.Background(), dir, path, env.URL+"/mcp", fileAuth{mcp: "Bearer role-cred", control: "Bearer control-tok"})
	if err != nil || len(rows) != 1 || rows[0]["result"] != true {
		t.Fatalf("%v %v", rows, err)
	}
	got := strings.Join(seen.recorded(), "\n")
	for _, want := range []string{"POST /agentenv auth=Bearer control-tok", "POST /mcp auth=Bearer role-cred", "DELETE /mcp auth=Bearer role-cred"} {
		if !strings.Contains(got, want) {
			t.Errorf("env requests:\n%s\nwant %q", got, want)
		}
	}
	if other := other.recorded(); len(other) != 1 || other[0] != "/agentenv auth=" {
		t.Errorf("another host got %v, want one request without credentials", other)
	}
}
