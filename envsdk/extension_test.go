package envsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

type echoIn struct {
	Message string `json:"message"`
}

type lookupIn struct {
	Limit   int         `json:"limit"`
	Verbose bool        `json:"verbose" default:"true"`
	Level   int         `json:"level" enum:"1,2,3" default:"1"`
	Tags    []string    `json:"tags,omitempty"`
	When    envsdk.Date `json:"when,omitempty"`
}

func extServer(t *testing.T) *envsdktest.Env { return envsdktest.Start(t, extEnv()) }

// extHandler is the same env as a plain handler (for the fuzz target).
func extHandler(tb testing.TB) http.Handler {
	h, err := extEnv().Handler()
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func extEnv() *envsdk.Server {
	s := envsdk.New(&protocol.EnvCard{Name: "ext", Capabilities: protocol.EnvCapabilities{Extensions: []protocol.Extension{
		{URI: "urn:declared/v1", Description: "Declared on the card.", Params: json.RawMessage(`{"endpoint":"/custom"}`)},
	}}}, &envsdk.Options{Getenv: noEnv, MaxBodyBytes: 512})
	envsdk.AddExtension(s, &envsdk.Extension{URI: "urn:example:echo/v1", Description: "Echo a message.", Name: "echo"},
		func(ctx context.Context, req *envsdk.Request, in echoIn) (map[string]any, error) {
			if in.Message == "fail" {
				return nil, errors.New("echo broke")
			}
			c := envsdk.CallerFrom(ctx)
			return map[string]any{"message": in.Message, "role": c.Role, "session": c.Session, "transport": req.Transport, "tool": req.Tool}, nil
		})
	envsdk.AddExtension(s, &envsdk.Extension{URI: "urn:example:lookup/v1", Name: "lookup", Method: "get"},
		func(_ context.Context, _ *envsdk.Request, in lookupIn) (lookupIn, error) { return in, nil })
	envsdk.AddExtension(s, &envsdk.Extension{URI: "urn:example:nil/v1", Name: "nothing", Path: "/x/nothing"},
		func(context.Context, *envsdk.Request, struct{}) (any, error) { return nil, nil })
	envsdk.AddExtension(s, &envsdk.Extension{URI: "urn:declared/v1", Name: "declared", Path: "/custom"},
		func(context.Context, *envsdk.Request, struct{}) (string, error) { return "served", nil })
	return s
}

func do(t *testing.T, method, url, body string, h map[string]string) (int, any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s %s: %d %q", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode, v
}

func TestExtensionAdvertisement(t *testing.T) {
	env := extServer(t)
	_, _, card := getJSON(t, env.CardURL)
	got := card.(map[string]any)["capabilities"].(map[string]any)["extensions"]
	want := mustJSON(t, `[
	 {"uri":"urn:declared/v1","description":"Declared on the card.","params":{"endpoint":"/custom"},"required":null},
	 {"uri":"urn:example:echo/v1","description":"Echo a message.","required":false,
	  "params":{"endpoint":"/agentenv/ext/echo","methods":{"echo":{"method":"POST",
	    "request":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}}}},
	 {"uri":"urn:example:lookup/v1","description":null,"required":false,
	  "params":{"endpoint":"/agentenv/ext/lookup","methods":{"lookup":{"method":"GET",
	    "request":{"type":"object","properties":{"limit":{"type":"integer"},"verbose":{"type":"boolean","default":true},
	      "level":{"type":"integer","enum":[1,2,3],"default":1},"tags":{"type":"array","items":{"type":"string"}},
	      "when":{"type":"string","format":"date"}},"required":["limit"]}}}}},
	 {"uri":"urn:example:nil/v1","description":null,"required":false,
	  "params":{"endpoint":"/x/nothing","methods":{"nothing":{"method":"POST","request":{"type":"object","properties":{}}}}}}]`)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("extensions (-want +got):\n%s", d)
	}
}

func TestExtensionCalls(t *testing.T) {
	env := extServer(t)
	b := env.BaseURL
	cases := []struct {
		name, method, path, body string
		status                   int
		resp                     string
	}{
		{"post", "POST", "/agentenv/ext/echo", `{"message":"hi"}`, 200,
			`{"message":"hi","role":"agent","session":"sess-9","transport":"rest","tool":"echo"}`},
		{"empty body is {}: missing parameter", "POST", "/agentenv/ext/echo", ``, 400,
			`{"ok":false,"error":{"code":"invalid_params","message":"missing parameter: message"}}`},
		{"unknown name", "POST", "/agentenv/ext/echo", `{"message":"hi","extra":1}`, 400,
			`{"ok":false,"error":{"code":"invalid_params","message":"unknown parameter: extra"}}`},
		{"wrong type", "POST", "/agentenv/ext/echo", `{"message":5}`, 400,
			`{"ok":false,"error":{"code":"invalid_params","message":"message: 5 is not a string"}}`},
		{"not an object", "POST", "/agentenv/ext/echo", `[1]`, 400,
			`{"ok":false,"error":{"code":"invalid_params","message":"body must be a JSON object"}}`},
		{"handler error", "POST", "/agentenv/ext/echo", `{"message":"fail"}`, 500,
			`{"ok":false,"error":{"code":"extension_failed","message":"echo broke"}}`},
		{"too large", "POST", "/agentenv/ext/echo", `{"message":"` + strings.Repeat("x", 600) + `"}`, 413,
			`{"ok":false,"error":{"code":"invalid_params","message":"body too large"}}`},
		{"GET coercion", "GET", "/agentenv/ext/lookup?limit=10&verbose=false&level=3&tags=a&tags=b&when=2026-03-01", ``, 200,
			`{"limit":10,"verbose":false,"level":3,"tags":["a","b"],"when":"2026-03-01"}`},
		{"GET defaults and yes/no", "GET", "/agentenv/ext/lookup?limit=2&verbose=no", ``, 200,
			`{"limit":2,"verbose":false,"level":1}`},
		{"GET uncoercible int", "GET", "/agentenv/ext/lookup?limit=ten", ``, 400,
			`{"ok":false,"error":{"code":"invalid_params","message":"limit: \"ten\" is not a number"}}`},
		{"GET uncoercible bool", "GET", "/agentenv/ext/lookup?limit=1&verbose=maybe", ``, 400,
			`{"ok":false,"error":{"code":"invalid_params","message":"verbose: \"maybe\" is not a boolean"}}`},
		{"GET literal out of set", "GET", "/agentenv/ext/lookup?limit=1&level=7", ``, 400,
			`{"ok":false,"error":{"code":"invalid_params","message":"level: 7 is not one of 1,2,3"}}`},
		{"GET missing parameter", "GET", "/agentenv/ext/lookup", ``, 400,
			`{"ok":false,"error":{"code":"invalid_params","message":"missing parameter: limit"}}`},
		{"GET bad date", "GET", "/agentenv/ext/lookup?limit=1&when=tomorrow", ``, 400,
			`{"ok":false,"error":{"code":"invalid_params","message":"when: tomorrow is not a date (YYYY-MM-DD)"}}`},
		{"POST is coerced too", "POST", "/agentenv/ext/echo", `{"message":"1"}`, 200,
			`{"message":"1","role":"agent","session":"sess-9","transport":"rest","tool":"echo"}`},
		{"nil result is {}", "POST", "/x/nothing", ``, 200, `{}`},
		{"card-declared URI still served", "POST", "/custom", ``, 200, `"served"`},
		{"wrong verb", "POST", "/agentenv/ext/lookup?limit=1", ``, 405, ``},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.status == 405 {
				resp, err := http.Post(b+c.path, "application/json", nil)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 405 {
					t.Fatalf("status %d", resp.StatusCode)
				}
				return
			}
			status, got := do(t, c.method, b+c.path, c.body, map[string]string{"AgentEnv-Role": "agent", "Mcp-Session-Id": "sess-9"})
			if status != c.status {
				t.Fatalf("status %d, want %d (%v)", status, c.status, got)
			}
			if d := cmp.Diff(mustJSON(t, c.resp), got); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
		})
	}
}

// gatewayClock is a stand-in for the gateway's GET /clock/time route.
func gatewayClock(t *testing.T, armed *atomic.Bool, now string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !armed.Load() {
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"ok":false,"error":"clock not armed"}`))
			return
		}
		_, _ = w.Write([]byte(`{"virtual_time":"` + now + `"}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestClockSyncAndNow(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "clocked"}, &envsdk.Options{Getenv: noEnv})
	s.EnableClock()
	envsdk.AddTool(s, &envsdk.Tool{Name: "now"}, func(ctx context.Context, _ *envsdk.Request, _ struct{}) (string, error) {
		t, err := envsdk.Now(ctx)
		if err != nil {
			return "", err
		}
		return t.Format(time.RFC3339), nil
	})
	env := envsdktest.Start(t, s)

	_, _, card := getJSON(t, env.CardURL)
	want := mustJSON(t, `[{"uri":"urn:agentenv:clock/v1","description":"Sync virtual time from the gateway.","required":false,
	 "params":{"endpoint":"/agentenv/ext/sync_time","methods":{"sync_time":{"method":"POST",
	   "request":{"type":"object","properties":{"env_get_time_url":{"type":"string"}},"required":["env_get_time_url"]}}}}}]`)
	if d := cmp.Diff(want, card.(map[string]any)["capabilities"].(map[string]any)["extensions"]); d != "" {
		t.Fatalf("clock entry (-want +got):\n%s", d)
	}

	// Before any sync: wall clock (checked loosely: a parseable RFC 3339 time).
	before := env.Call(t, "now", map[string]any{})
	if _, err := time.Parse(time.RFC3339, before.Text); before.IsError || err != nil {
		t.Fatalf("wall now = %+v", before)
	}
	var armed atomic.Bool
	gw := gatewayClock(t, &armed, "2026-03-01T09:00:00Z")

	// Syncing while the gateway clock is off still stores the URL.
	status, got := do(t, "POST", env.BaseURL+"/agentenv/ext/sync_time", `{"env_get_time_url":"`+gw.URL+`/clock/time"}`, nil)
	if d := cmp.Diff(mustJSON(t, `{"env_get_time_url":"`+gw.URL+`/clock/time","gateway_virtual_time":null}`), got); status != 200 || d != "" {
		t.Fatalf("sync %d (-want +got):\n%s", status, d)
	}
	// Not armed: Now is an error, never wall time.
	if res := env.Call(t, "now", map[string]any{}); !res.IsError || !strings.Contains(res.Text, "404") {
		t.Fatalf("unarmed now = %+v", res)
	}
	armed.Store(true)
	status, got = do(t, "POST", env.BaseURL+"/agentenv/ext/sync_time", `{"env_get_time_url":"`+gw.URL+`/clock/time"}`, nil)
	if d := cmp.Diff(mustJSON(t, `{"env_get_time_url":"`+gw.URL+`/clock/time","gateway_virtual_time":"2026-03-01T09:00:00Z"}`), got); status != 200 || d != "" {
		t.Fatalf("sync %d (-want +got):\n%s", status, d)
	}
	if res := env.Call(t, "now", map[string]any{}); res.IsError || res.Text != "2026-03-01T09:00:00Z" {
		t.Fatalf("virtual now = %+v", res)
	}
	status, _ = do(t, "POST", env.BaseURL+"/agentenv/ext/sync_time", `{"env_get_time_url":"not a url"}`, nil)
	if status != 400 {
		t.Fatalf("bad url status %d", status)
	}
	// Outside a server, Now is wall time.
	if _, err := envsdk.Now(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestReadyAndShutdown(t *testing.T) {
	s, _ := itemsServer(t, nil)
	env := envsdktest.Start(t, s)
	status, got := do(t, "GET", env.BaseURL+"/ready", "", nil)
	if status != 200 || cmp.Diff(mustJSON(t, `{"status":"ok"}`), got) != "" {
		t.Fatalf("ready %d %v", status, got)
	}
}
