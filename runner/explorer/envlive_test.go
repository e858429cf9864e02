package explorer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/gateway"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/explorer"
)

const (
	liveID     = "notes-live0001"
	liveSecret = "ctl-3f9a1c0de7b24e55a1f0c9d8e7b6a5f4"
)

// liveGateway is a real gateway over loopback with one real envsdk env
// ("notes") behind it, run with a control token as the runner runs them.
type liveGateway struct {
	URL string
}

func startLiveGateway(t *testing.T) *liveGateway {
	t.Helper()
	var mu sync.Mutex
	notes := []string{"first"}
	s := envsdk.New(&protocol.EnvCard{Name: "notes"}, &envsdk.Options{Getenv: func(string) string { return "" }})
	envsdk.AddTool(s, &envsdk.Tool{Name: "notes_add", Description: "Add a note."},
		func(ctx context.Context, req *envsdk.Request, in struct {
			Text string `json:"text"`
		}) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			notes = append(notes, in.Text)
			return "added", nil
		})
	envsdk.AddTool(s, &envsdk.Tool{Name: "notes_list", Description: "List the notes."},
		func(ctx context.Context, req *envsdk.Request, in struct{}) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			return strings.Join(notes, "\n"), nil
		})
	s.HandleReset(func(context.Context) error { return nil })
	s.HandleGet(func(context.Context) ([]protocol.Part, error) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(map[string]any{"notes": notes, "owner": "<alice>"})
		return []protocol.Part{protocol.DataPart(b)}, nil
	})
	env := envsdktest.Start(t, s)
	g, err := gateway.New(&gateway.Config{
		Name:           "notes-gw",
		Servers:        []gateway.Server{{Name: "notes", URL: env.MCPURL}},
		RESTProxies:    []gateway.Upstream{{Key: "mcp-notes", URL: env.BaseURL}},
		TrajectoryFile: t.TempDir() + "/trajectory.jsonl",
		ControlToken:   liveSecret,
	}, &gateway.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := newLoopbackServer(t, g.Handler())
	t.Cleanup(func() { g.Close() })
	g.Start()
	poll(t, "gateway ready", func() bool {
		res, err := http.Get(hs + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
	return &liveGateway{URL: hs}
}

// control sends a control request to the gateway as the harness.
func (g *liveGateway) control(t *testing.T, method, path, body string) {
	t.Helper()
	req, _ := http.NewRequest(method, g.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+liveSecret)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("%s %s = %d %s", method, path, res.StatusCode, b)
	}
}

// newLoopbackServer serves h on loopback until the test ends.
func newLoopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL
}

// poll checks cond every 20 ms until it holds, for at most 15 s: the
// gateway's readiness and a trigger's firing have no event to wait on
// from outside the gateway.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (f *fixture) liveInstance(id, gwURL, status string) {
	f.record(registry.EnvInstances, id, fmt.Sprintf(`{"instance_id":%q,"env_id":"notes","env_version":2,"env_type":"mcp_server",
"status":%q,"gateway_url":%q,"mcp_url":%q,"control_token":%q,"mcp_servers":["notes"],"sandbox_id":"grp-1","sandbox_type":"process",
"created_at_utc":"2026-03-02T09:00:00+00:00"}`, id, status, gwURL, gwURL+"/mcp", liveSecret))
}

// client is an HTTP client with a cookie jar, as a browser: the CSRF
// cookie of a page's GET goes back with its form's POST.
func (f *fixture) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var csrfRe = `name="_csrf" value="`

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	i := strings.Index(body, csrfRe)
	if i < 0 {
		t.Fatalf("no _csrf field in the page")
	}
	rest := body[i+len(csrfRe):]
	return rest[:strings.IndexByte(rest, '"')]
}

// The live env page reads a real gateway: the tools each role sees, the
// clock, the triggers and their firing log, and the data plane; the
// control token never reaches a page or an answer.
func TestEnvLive(t *testing.T) {
	gw := startLiveGateway(t)
	f := newFixture(t, &explorer.Options{AllowControl: true})
	f.liveInstance(liveID, gw.URL, "deployed")
	gw.control(t, "POST", "/tools/disable", `{"role":"analyst","tools":["notes_add"]}`)

	// The page before any change (the gateway's port and the CSRF token
	// vary from run to run).
	_, page, _ := f.get("/env?id=" + liveID + "&role=viewer")
	page = strings.ReplaceAll(page, strings.TrimPrefix(gw.URL, "http://"), "<gateway>")
	page = regexp.MustCompile(`name="_csrf" value="[^"]*"`).ReplaceAllString(page, `name="_csrf" value="<csrf>"`)
	checkGolden(t, "env_live", page)

	var v explorer.EnvLive
	f.getJSON("/api/v1/env?id="+liveID+"&role=viewer", &v)
	if !v.Reachable || v.ToolsError != "" || v.ClockError != "" || v.TriggersError != "" {
		t.Fatalf("live view: %+v", v)
	}
	roles := map[string][]string{}
	for _, r := range v.Roles {
		if r.Error != "" {
			t.Errorf("role %s: %s", r.Role, r.Error)
		}
		roles[r.Role] = r.Tools
	}
	if want := []string{"notes_add", "notes_list"}; !slices.Equal(roles["default"], want) || !slices.Equal(roles["viewer"], want) {
		t.Errorf("default/viewer tools = %v / %v; want %v", roles["default"], roles["viewer"], want)
	}
	if want := []string{"notes_list"}; !slices.Equal(roles["analyst"], want) {
		t.Errorf("analyst tools = %v; want %v", roles["analyst"], want)
	}
	if len(v.Tools) != 2 || v.Tools[0].Server != "notes" || v.Tools[0].Enabled["analyst"] || !v.Tools[0].Enabled["default"] {
		t.Errorf("tool matrix = %+v", v.Tools)
	}
	if v.Clock == nil || v.Clock.Armed {
		t.Errorf("clock = %+v; want unarmed", v.Clock)
	}
	if len(v.Data) != 1 || v.Data[0].Error != "" || !strings.Contains(fmt.Sprint(v.Data[0].Parts), "first") {
		t.Errorf("data plane = %+v", v.Data)
	}

	// Set the clock through the explorer (the page's form), then a time
	// trigger fires on it.
	cl := f.client()
	res, err := cl.Get(f.srv.URL + "/env?id=" + liveID)
	if err != nil {
		t.Fatal(err)
	}
	page = readAll(t, res)
	form := url.Values{"_csrf": {csrfOf(t, page)}, "id": {liveID}, "virtual_time": {"2026-03-01T09:00:00Z"}, "rate": {"86400"}}
	res, err = cl.PostForm(f.srv.URL+"/env/clock", form)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, res); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/env?id="+liveID+"&done=clock" {
		t.Fatalf("clock form = %d %s %s", res.StatusCode, res.Header.Get("Location"), body)
	}
	gw.control(t, "POST", "/triggers/register", `{"triggers":[{"id":"soon","when":{"type":"time","at":"PT1H"},
"actions":[{"type":"tool","tool":"notes_add","args":{"text":"from the trigger"}}]}]}`)
	poll(t, "the trigger to fire", func() bool {
		var v explorer.EnvLive
		f.getJSON("/api/v1/env?id="+liveID, &v)
		return v.Triggers != nil && len(v.Triggers.Triggers) == 1 && v.Triggers.Triggers[0].FireCount == 1
	})
	f.getJSON("/api/v1/env?id="+liveID, &v)
	if v.Clock == nil || !v.Clock.Armed || v.Clock.Rate == nil {
		t.Errorf("clock after set = %+v", v.Clock)
	}
	if len(v.Triggers.Events) == 0 || !strings.Contains(fmt.Sprint(v.Data[0].Parts), "from the trigger") {
		t.Errorf("events %d, data %v", len(v.Triggers.Events), v.Data[0].Parts)
	}

	// Tool access through the page's per-cell button.
	res, _ = cl.Get(f.srv.URL + "/env?id=" + liveID)
	page = readAll(t, res)
	for _, want := range []string{`id="tools-table"`, `id="clock-table"`, `id="triggers-table"`, `id="trigger-events"`, `class="jsontree"`,
		`&#34;&lt;alice&gt;&#34;`, `data-role="analyst" data-tool="notes_add"`} {
		if !strings.Contains(page, want) {
			t.Errorf("env page lacks %s", want)
		}
	}
	form = url.Values{"_csrf": {csrfOf(t, page)}, "id": {liveID}, "role": {"analyst"}, "tools": {"notes_add"}, "action": {"enable"}}
	res, err = cl.PostForm(f.srv.URL+"/env/tools", form)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, res); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("tools form = %d %s", res.StatusCode, body)
	}
	f.getJSON("/api/v1/env?id="+liveID, &v)
	for _, r := range v.Roles {
		if r.Role == "analyst" && !slices.Contains(r.Tools, "notes_add") {
			t.Errorf("analyst after enable: %v", r.Tools)
		}
	}
	res, _ = cl.Get(f.srv.URL + "/env?id=" + liveID + "&done=tools")
	if page := readAll(t, res); !strings.Contains(page, `id="env-done"`) {
		t.Errorf("no confirmation after the change")
	}

	// The API: JSON with the CSRF header.
	res, _ = cl.Get(f.srv.URL + "/envs")
	tok := csrfCookie(t, cl, f.srv.URL)
	readAll(t, res)
	post := func(path, body, csrf string) (int, string) {
		req, _ := http.NewRequest("POST", f.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if csrf != "" {
			req.Header.Set("X-CSRF-Token", csrf)
		}
		res, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, readAll(t, res)
	}
	if code, body := post("/api/v1/env/tools", `{"id":"`+liveID+`","action":"disable","role":"viewer","tools":"*"}`, tok); code != 200 || !strings.Contains(body, `"snapshot"`) {
		t.Errorf("api tools = %d %s", code, body)
	}
	if code, body := post("/api/v1/env/tools", `{"id":"`+liveID+`","action":"disable","role":"viewer","tools":"*"}`, ""); code != 400 {
		t.Errorf("api tools without the CSRF token = %d %s; want 400", code, body)
	}
	if code, body := post("/api/v1/env/clock", `{"id":"`+liveID+`","virtual_time":"2026-03-05T12:00:00Z","virtual_seconds_per_real_second":0}`, tok); code != 200 || !strings.Contains(body, "2026-03-05T12:00:00") {
		t.Errorf("api clock = %d %s", code, body)
	}
	for _, c := range []struct{ path, body, field string }{
		{"/api/v1/env/tools", `{"id":"` + liveID + `","action":"drop","role":"viewer","tools":"*"}`, "action"},
		{"/api/v1/env/tools", `{"id":"` + liveID + `","action":"enable","role":"","tools":"*"}`, "role"},
		{"/api/v1/env/tools", `{"id":"` + liveID + `","action":"enable","role":"r","tools":[]}`, "tools"},
		{"/api/v1/env/tools", `{"id":"` + liveID + `","action":"enable","role":"r","tools":"*","extra":1}`, "extra"},
		{"/api/v1/env/clock", `{"id":"` + liveID + `"}`, "virtual_time"},
		{"/api/v1/env/clock", `{"id":"` + liveID + `","virtual_time":"2026-03-05T12:00:00Z","virtual_seconds_per_real_second":-1}`, "virtual_seconds_per_real_second"},
		{"/api/v1/env/clock", `{"id":"` + liveID + `","virtual_time":"yesterday"}`, "gateway refused"},
		{"/api/v1/env/clock", `{"virtual_time":"2026-03-05T12:00:00Z"}`, "id"},
		{"/api/v1/env/clock", `[`, "body"},
	} {
		if code, body := post(c.path, c.body, tok); code != 400 || !strings.Contains(body, c.field) {
			t.Errorf("POST %s %s = %d %s; want 400 naming %s", c.path, c.body, code, body, c.field)
		}
	}
	if code, body := post("/api/v1/env/clock", `{"id":"nope","virtual_time":"2026-03-05T12:00:00Z"}`, tok); code != 404 {
		t.Errorf("unknown instance = %d %s", code, body)
	}

	// The control token is nowhere in what the explorer serves.
	for _, p := range []string{"/api/v1/env?id=" + liveID, "/env?id=" + liveID, "/api/v1/envs", "/envs"} {
		if _, body, _ := f.get(p); strings.Contains(body, liveSecret) {
			t.Errorf("%s shows the control token", p)
		}
	}
}

// csrfCookie is the CSRF cookie the explorer set on cl.
func csrfCookie(t *testing.T, cl *http.Client, base string) string {
	t.Helper()
	u, _ := url.Parse(base)
	for _, c := range cl.Jar.Cookies(u) {
		if c.Name == "agentenv_csrf" {
			return c.Value
		}
	}
	t.Fatal("no CSRF cookie")
	return ""
}

// Without --allow-control the buttons render disabled and the write
// routes answer 403; a torn-down instance, one with a dead gateway and an
// unknown one each get a clear message.
func TestEnvLiveNoControl(t *testing.T) {
	gw := startLiveGateway(t)
	f := newFixture(t, nil)
	f.liveInstance(liveID, gw.URL, "deployed")
	f.liveInstance("gone-0001", "http://127.0.0.1:1", "torn_down")
	f.liveInstance("dead-0001", "http://127.0.0.1:1", "deployed")
	code, page, _ := f.get("/env?id=" + liveID)
	if code != 200 || !strings.Contains(page, `data-tool="notes_add" disabled`) || !strings.Contains(page, "--allow-control") {
		t.Errorf("env page without control = %d; want disabled buttons", code)
	}
	cl := f.client()
	res, _ := cl.Get(f.srv.URL + "/env?id=" + liveID)
	tok := csrfOf(t, readAll(t, res))
	res, err := cl.PostForm(f.srv.URL+"/env/tools", url.Values{"_csrf": {tok}, "id": {liveID}, "role": {"r"}, "tools": {"*"}, "action": {"disable"}})
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, res); res.StatusCode != 403 || !strings.Contains(body, "--allow-control") {
		t.Errorf("form without control = %d %s", res.StatusCode, body)
	}
	req, _ := http.NewRequest("POST", f.srv.URL+"/api/v1/env/clock", strings.NewReader(`{"id":"`+liveID+`","virtual_time":"2026-03-05T12:00:00Z"}`))
	req.Header.Set("X-CSRF-Token", csrfCookie(t, cl, f.srv.URL))
	req.Header.Set("Content-Type", "application/json")
	res, err = cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, res); res.StatusCode != 403 {
		t.Errorf("api without control = %d %s", res.StatusCode, body)
	}
	for id, want := range map[string]string{"gone-0001": "torn_down", "dead-0001": "did not answer"} {
		code, page, _ := f.get("/env?id=" + id)
		if id == "gone-0001" {
			checkGolden(t, "env_torn_down", page)
		}
		if code != 200 || !strings.Contains(page, `id="env-note"`) || !strings.Contains(page, want) {
			t.Errorf("/env?id=%s = %d; want a note with %q:\n%s", id, code, want, page)
		}
	}
	if code, _, _ := f.get("/env?id=nope"); code != 404 {
		t.Errorf("unknown instance page = %d", code)
	}
	if code, body, _ := f.get("/api/v1/env"); code != 400 || !strings.Contains(body, "id") {
		t.Errorf("api without id = %d %s", code, body)
	}
}
