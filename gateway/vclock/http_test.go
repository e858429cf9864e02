package vclock

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func do(t *testing.T, srv *httptest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: body %q: %v", method, path, b, err)
	}
	return resp.StatusCode, m
}

func newServer(t *testing.T, conflict *atomic.Bool) (*Virtual, *httptest.Server) {
	c := New(nil)
	mux := http.NewServeMux()
	NewHandler(c, &HandlerOptions{MaxBodyBytes: 1024, GetTimeURL: "http://gateway:18765/clock/time", Conflict: conflict.Load}).Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return c, srv
}

func TestHTTPRoutes(t *testing.T) {
	var conflict atomic.Bool
	_, srv := newServer(t, &conflict)
	if code, m := do(t, srv, "GET", "/clock/time", ""); code != 404 || m["error"] != "clock not armed" || m["ok"] != false {
		t.Fatalf("unarmed time: %d %v", code, m)
	}
	if code, m := do(t, srv, "GET", "/clock/state", ""); code != 200 || len(m) != 1 || m["armed"] != false {
		t.Fatalf("unarmed state: %d %v", code, m)
	}
	req, _ := http.NewRequest("PUT", srv.URL+"/clock/set-time", strings.NewReader(`{"virtual_time":"2026-03-01T09:00:00Z","virtual_seconds_per_real_second":0}`))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `{"armed":true,"t0":"2026-03-01T09:00:00Z","virtual_seconds_per_real_second":0.0,"virtual_time":"2026-03-01T09:00:00Z"}`
	if resp.StatusCode != 200 || string(raw) != want {
		t.Fatalf("set-time: %d %s", resp.StatusCode, raw)
	}
	if code, m := do(t, srv, "GET", "/clock/time", ""); code != 200 || m["virtual_time"] != "2026-03-01T09:00:00Z" {
		t.Fatalf("time: %d %v", code, m)
	}
	if code, m := do(t, srv, "GET", "/clock/state", ""); code != 200 || m["env_get_time_url"] != "http://gateway:18765/clock/time" || m["t0"] != "2026-03-01T09:00:00Z" {
		t.Fatalf("state: %d %v", code, m)
	}
	if code, m := do(t, srv, "POST", "/clock/clear", "garbage"); code != 200 || m["ok"] != true || m["armed"] != false {
		t.Fatalf("clear: %d %v", code, m)
	}
	if code, _ := do(t, srv, "POST", "/clock/clear", ""); code != 200 {
		t.Fatal("clear not idempotent")
	}
	conflict.Store(true)
	if code, m := do(t, srv, "PUT", "/clock/set-time", `{"virtual_time":"bad"}`); code != 409 || m["error"] != "'get_time' is already registered by a backing server" {
		t.Fatalf("conflict: %d %v", code, m)
	}
}

func TestHTTPRejections(t *testing.T) {
	var conflict atomic.Bool
	c, srv := newServer(t, &conflict)
	do(t, srv, "PUT", "/clock/set-time", `{"virtual_time":"2026-03-01T09:00:00Z","virtual_seconds_per_real_second":0}`)
	cases := map[string]string{
		`not json`:                      "Invalid JSON body",
		`[1,2]`:                         "body must be a JSON object",
		`"x"`:                           "body must be a JSON object",
		`null`:                          "body must be a JSON object",
		`{}`:                            "virtual_time must be an RFC3339 string, got NoneType",
		`{"virtual_time":null}`:         "virtual_time must be an RFC3339 string, got NoneType",
		`{"virtual_time":17}`:           "virtual_time must be an RFC3339 string, got int",
		`{"virtual_time":"not-a-date"}`: "invalid RFC3339 virtual_time 'not-a-date': expected YYYY-MM-DDThh:mm:ss[.fff](Z|+hh:mm)",
		`{"virtual_time":"2026-03-01T09:00:00Z","virtual_seconds_per_real_second":true}`:  "rate must be a number, got bool",
		`{"virtual_time":"2026-03-01T09:00:00Z","virtual_seconds_per_real_second":-2}`:    "rate must be non-negative",
		`{"virtual_time":"2026-03-01T09:00:00Z","virtual_seconds_per_real_second":NaN}`:   "Invalid JSON body",
		`{"virtual_time":"2026-03-01T09:00:00Z","virtual_seconds_per_real_second":1e999}`: "rate must be a finite number, got 1e999",
		`{"virtual_time":"9999-12-31T00:00:00Z","virtual_seconds_per_real_second":1}`:     "virtual_time '9999-12-31T00:00:00Z' at rate 1 would overflow datetime near the max",
	}
	for body, want := range cases {
		code, m := do(t, srv, "PUT", "/clock/set-time", body)
		if code != 400 || m["error"] != want || m["ok"] != false {
			t.Errorf("%s: %d %v, want 400 %q", body, code, m, want)
		}
	}
	if code, m := do(t, srv, "PUT", "/clock/set-time", `{"virtual_time":"`+strings.Repeat("x", 2000)+`"}`); code != 413 || m["error"] != "request body too large" {
		t.Errorf("oversized: %d %v", code, m)
	}
	// A rejected set leaves the previous clock untouched.
	if st := c.State(); !st.Armed || !st.T0.Equal(t0) || st.Rate != 0 {
		t.Fatalf("clock changed by rejected sets: %+v", st)
	}
}
