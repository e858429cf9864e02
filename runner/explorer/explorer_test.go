package explorer_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/explorer"
)

var update = flag.Bool("update", false, "rewrite the golden HTML files in testdata/")

func (f *fixture) get(path string, hdr ...string) (int, string, http.Header) {
	f.t.Helper()
	req, err := http.NewRequest("GET", f.srv.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return res.StatusCode, string(b), res.Header
}

func (f *fixture) getJSON(path string, v any) {
	f.t.Helper()
	code, body, _ := f.get(path)
	if code != 200 {
		f.t.Fatalf("GET %s = %d %s", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		f.t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

func q(s string) string { return url.QueryEscape(s) }

// Every page renders with empty stores: a clear empty message, no error.
func TestPagesEmptyStore(t *testing.T) {
	f := newFixture(t, nil)
	for path, want := range map[string]string{
		"/runs":                      `id="runs-empty"`,
		"/evals":                     `id="evals-empty"`,
		"/registry":                  `id="registry-empty"`,
		"/registry?collection=envs":  `id="registry-empty"`,
		"/envs":                      `id="envs-empty"`,
		"/eval?id=none":              `id="eval-empty"`,
		"/runs?status=failed&task=x": "match these filters",
	} {
		code, body, _ := f.get(path)
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s = %d, want 200 with %s:\n%s", path, code, want, body)
		}
	}
}

// Golden HTML of every page over the seeded store (go test -update
// rewrites them).
func TestPagesGolden(t *testing.T) {
	f := newFixture(t, nil)
	f.seed()
	pages := map[string]string{
		"runs":                "/runs",
		"runs_filtered":       "/runs?status=completed&min_score=0.9",
		"run":                 "/run?id=" + q(doneID),
		"run_failed":          "/run?id=" + q(failedID),
		"run_live":            "/run?id=" + q(runningID),
		"trajectory_agent":    "/trajectory?key=" + q(agentTraj) + "&run=" + q(doneID),
		"trajectory_gw":       "/trajectory?key=" + q(gwTraj),
		"trajectory_search":   "/trajectory?key=" + q(agentTraj) + "&q=alice",
		"trajectory_timeline": "/trajectory?key=" + q(agentTraj) + "&gw=" + q(gwTraj) + "&run=" + q(doneID),
		"trajectory_gone":     "/trajectory?key=" + q("prompt_agent_trajectories/deleted.json"),
		"trajectory_broken":   "/trajectory?key=broken.json",
		"registry":            "/registry?collection=tasks",
		"versions":            "/registry/versions?collection=tasks&id=" + q(taskID),
		"diff":                "/registry/diff?collection=tasks&id=" + q(taskID) + "&a=1&b=2",
		"evals":               "/evals",
		"eval":                "/eval?id=weekly",
		"compare":             "/evals/compare?a=g1&b=g2",
		"envs":                "/envs",
	}
	times := regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d UTC|20\d\d-\d\d-\d\dT[0-9:.]+&#43;00:00`)
	for name, path := range pages {
		t.Run(name, func(t *testing.T) {
			code, body, _ := f.get(path)
			if code != 200 {
				t.Fatalf("GET %s = %d\n%s", path, code, body)
			}
			// Creation times of stored documents are the test's clock.
			checkGolden(t, name, times.ReplaceAllString(body, "<time>"))
		})
	}
}

// checkGolden compares body with testdata/name.html (go test -update
// rewrites it).
func checkGolden(t *testing.T, name, body string) {
	t.Helper()
	file := filepath.Join("testdata", name+".html")
	if *update {
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if d := cmp.Diff(string(want), body); d != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", file, d)
	}
}

func TestRunsAPI(t *testing.T) {
	f := newFixture(t, nil)
	f.seed()
	var all explorer.RunsPage
	f.getJSON("/api/v1/runs", &all)
	if len(all.Runs) != 7 || all.Next != "" {
		t.Fatalf("runs = %d next %q; want 7, no next", len(all.Runs), all.Next)
	}
	// Paging by cursor visits each run once, newest first.
	seen := map[string]bool{}
	after := ""
	for {
		var p explorer.RunsPage
		f.getJSON("/api/v1/runs?limit=3&after="+q(after), &p)
		for _, r := range p.Runs {
			if seen[r.InstanceID] {
				t.Fatalf("%s listed twice", r.InstanceID)
			}
			seen[r.InstanceID] = true
		}
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	if len(seen) != 7 {
		t.Fatalf("paged %d runs; want 7", len(seen))
	}
	for query, want := range map[string]int{
		"status=failed": 1, "status=running": 1, "task=" + q(taskID): 7, "task=other": 0,
		"eval=weekly": 4, "min_score=0.9": 4, "max_score=0.5": 1, "min_score=0.2&max_score=0.3": 1,
		"from=2020-01-01": 7, "to=2020-01-01": 0,
	} {
		var p explorer.RunsPage
		f.getJSON("/api/v1/runs?"+query, &p)
		if len(p.Runs) != want {
			t.Errorf("runs?%s = %d runs; want %d", query, len(p.Runs), want)
		}
	}
	var p explorer.RunsPage
	f.getJSON("/api/v1/runs?status=completed&task="+q(taskID)+"&limit=1", &p)
	if len(p.Runs) != 1 || p.Next == "" {
		t.Fatalf("limit=1 page = %+v", p)
	}
}

func TestRunAPI(t *testing.T) {
	f := newFixture(t, nil)
	f.seed()
	var d explorer.RunDetail
	f.getJSON("/api/v1/run?id="+q(doneID), &d)
	if d.Run.Score == nil || *d.Run.Score != 1 || !d.Run.Passed || d.Live {
		t.Errorf("run summary = %+v; want score 1, passed, not live", d.Run)
	}
	var ids []string
	for _, s := range d.Steps {
		ids = append(ids, s.ID+":"+s.Status)
	}
	if want := []string{"env:success", "agent:success", "prompt:success", "check:success"}; !cmp.Equal(ids, want) {
		t.Errorf("steps = %v; want %v", ids, want)
	}
	if s := d.Steps[1]; s.Seconds == nil || *s.Seconds != 3 || len(s.Diff) != 1 || s.Diff[0].Path != "step_2" || len(s.DependsOn) != 1 || s.DependsOn[0] != "env" {
		t.Errorf("step agent = %+v; want 3 s, one diff on step_2, depends on env", s)
	}
	if len(d.Verifications) != 1 || len(d.Verifications[0].Rows) != 2 || d.Verifications[0].Rows[1].Justification != "terse" {
		t.Errorf("verifications = %+v", d.Verifications)
	}
	if len(d.Prompts) != 2 || d.Prompts[0].TrajectoryKey != agentTraj {
		t.Errorf("prompts = %+v", d.Prompts)
	}
	if len(d.Envs) != 1 || d.Envs[0].Sandbox != "process-abc" || len(d.Agents) != 1 {
		t.Errorf("links = %+v %+v", d.Envs, d.Agents)
	}
	var failed explorer.RunDetail
	f.getJSON("/api/v1/run?id="+q(failedID), &failed)
	if failed.Steps[1].Status != "failure" || !strings.Contains(failed.Steps[1].Error, "exited with status 2") {
		t.Errorf("failed run's agent step = %+v; want failure with the run's error", failed.Steps[1])
	}
	var live explorer.RunDetail
	f.getJSON("/api/v1/run?id="+q(runningID), &live)
	if !live.Live || live.Steps[1].Status != "running" || live.Steps[2].Status != "pending" {
		t.Errorf("running run = live %v steps %+v; want agent running, prompt pending", live.Live, live.Steps)
	}
}

func TestTrajectoryAPI(t *testing.T) {
	f := newFixture(t, nil)
	f.seed()
	var p explorer.TrajectoryPage
	f.getJSON("/api/v1/trajectory?key="+q(agentTraj), &p)
	if p.Format != "agent" || p.Total != 5 || len(p.Items) != 3 || p.Items[0].Tool != "email_search" || !strings.Contains(p.Items[0].Result, "m1") {
		t.Fatalf("agent trajectory = %+v; want 5 entries folded to 3, results in their calls", p)
	}
	f.getJSON("/api/v1/trajectory?key="+q(agentTraj)+"&offset=4&limit=1", &p)
	if len(p.Items) != 1 || p.Items[0].Kind != "final" || p.Items[0].Index != 4 {
		t.Fatalf("page at 4 = %+v", p.Items)
	}
	f.getJSON("/api/v1/trajectory?key="+q(agentTraj)+"&q=ALICE", &p)
	if p.Total != 1 || p.Items[0].Tool != "email_send_message" {
		t.Fatalf("search = %+v", p)
	}
	var gw explorer.TrajectoryPage
	f.getJSON("/api/v1/trajectory?key="+q(gwTraj), &gw)
	if gw.Format != "gateway" || len(gw.Items) != 2 || gw.Items[0].LatencyMS == nil || *gw.Items[0].LatencyMS != 250 ||
		gw.Items[0].Role != "assistant" || gw.Items[0].VirtualTime == "" || gw.Items[1].Kind != "trigger_fired" {
		t.Fatalf("gateway trajectory = %+v", gw)
	}
}

// Bad input is a 400 naming the parameter; a missing thing a 404; never
// a 500.
func TestAPIBadInput(t *testing.T) {
	f := newFixture(t, nil)
	f.seed()
	for path, want := range map[string]int{
		"/api/v1/runs?limit=0":                                     400,
		"/api/v1/runs?limit=abc":                                   400,
		"/api/v1/runs?from=yesterday":                              400,
		"/api/v1/runs?min_score=high":                              400,
		"/api/v1/runs?after=garbage":                               400,
		"/api/v1/runs?store=3":                                     400,
		"/api/v1/run":                                              400,
		"/api/v1/run?id=nope":                                      404,
		"/api/v1/trajectory":                                       400,
		"/api/v1/trajectory?key=x&offset=-1":                       400,
		"/api/v1/trajectory?key=nope.json":                         404,
		"/api/v1/trajectory?key=broken.json":                       400,
		"/api/v1/trajectory?key=../../etc/passwd":                  400,
		"/api/v1/registry/users":                                   400,
		"/api/v1/registry/tasks/versions?id=nope":                  404,
		"/api/v1/registry/tasks/diff?id=" + q(taskID) + "&a=1&b=9": 404,
		"/api/v1/registry/tasks/diff?id=" + q(taskID) + "&a=x&b=1": 400,
		"/api/v1/evals/compare?a=g1":                               400,
		"/api/v1/evals/compare?a=g1&b=nope":                        404,
		"/api/v1/eval?id=weekly&k=0":                               400,
		"/run?id=nope":                                             404,
		"/run/panel?name=evil&id=" + q(doneID):                     400,
		"/nope":                                                    404,
	} {
		code, body, _ := f.get(path)
		if code != want {
			t.Errorf("GET %s = %d %s; want %d", path, code, body, want)
			continue
		}
		if strings.HasPrefix(path, "/api/") {
			var e struct{ Error string }
			if json.Unmarshal([]byte(body), &e) != nil || e.Error == "" || strings.Contains(e.Error, "*") {
				t.Errorf("GET %s body = %s; want {\"error\": a message}", path, body)
			}
		}
	}
}

func TestEvalAPI(t *testing.T) {
	f := newFixture(t, nil)
	f.seed()
	var v explorer.EvalView
	f.getJSON("/api/v1/eval?id=weekly", &v)
	if len(v.Runs) != 2 {
		t.Fatalf("eval runs = %d; want 2", len(v.Runs))
	}
	byGroup := map[string]*explorer.EvalRunView{}
	for _, r := range v.Runs {
		byGroup[r.Group] = r
	}
	g2 := byGroup["g2"]
	if g2 == nil || g2.K != 2 || len(g2.Tasks) != 1 || g2.Tasks[0].Passed != 1 || *g2.Tasks[0].PassAt1 != 0.5 || *g2.Tasks[0].PassAtK != 1 ||
		g2.Histogram[2] != 1 || g2.Histogram[9] != 1 {
		t.Fatalf("g2 = %+v", g2)
	}
	var c explorer.Comparison
	f.getJSON("/api/v1/evals/compare?a=g1&b=g2", &c)
	if len(c.Rows) != 1 || *c.Rows[0].A.PassAt1 != 1 || *c.Rows[0].B.PassAt1 != 0.5 {
		t.Fatalf("comparison = %+v", c.Rows)
	}
}

func TestRegistryAPI(t *testing.T) {
	f := newFixture(t, nil)
	f.seed()
	var p explorer.RegistryPage
	f.getJSON("/api/v1/registry/tasks", &p)
	if len(p.Docs) != 1 || p.Docs[0].Version != 2 {
		t.Fatalf("tasks = %+v", p)
	}
	var d explorer.Diff
	f.getJSON("/api/v1/registry/tasks/diff?id="+q(taskID)+"&a=1&b=2", &d)
	var added, removed int
	for _, l := range d.Lines {
		switch l.Op {
		case "+":
			added++
		case "-":
			removed++
		}
	}
	if added == 0 || removed == 0 {
		t.Fatalf("diff has %d added, %d removed lines", added, removed)
	}
}

// A live run's event stream sends its state, then each change, then "end"
// once it stops running.
func TestRunEvents(t *testing.T) {
	f := newFixture(t, &explorer.Options{PollInterval: 10_000_000})
	f.seed()
	res, err := f.srv.Client().Get(f.srv.URL + "/api/v1/run/events?id=" + q(runningID))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	sc := bufio.NewScanner(res.Body)
	next := func() (string, explorer.RunSummary) {
		t.Helper()
		var event string
		for sc.Scan() {
			line := sc.Text()
			if e, ok := strings.CutPrefix(line, "event: "); ok {
				event = e
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				var s explorer.RunSummary
				if err := json.Unmarshal([]byte(d), &s); err != nil {
					t.Fatal(err)
				}
				return event, s
			}
		}
		t.Fatalf("stream ended: %v", sc.Err())
		return "", explorer.RunSummary{}
	}
	if ev, s := next(); ev != "update" || s.Status != "running" || s.Steps != "1/4" {
		t.Fatalf("first event %s %+v", ev, s)
	}
	f.record(registry.TaskInstances, runningID, instance(runningID, "running", []string{"env", "agent"}, `"metadata":{}`))
	if ev, s := next(); ev != "update" || s.Steps != "2/4" {
		t.Fatalf("second event %s %+v", ev, s)
	}
	f.record(registry.TaskInstances, runningID, instance(runningID, "completed", []string{"env", "agent", "prompt", "check"}, `"metadata":{}`))
	if ev, _ := next(); ev != "update" {
		t.Fatalf("third event %s", ev)
	}
	if ev, s := next(); ev != "end" || s.Status != "completed" {
		t.Fatalf("last event %s %+v", ev, s)
	}
	// The panel the page swaps in renders alone.
	code, body, _ := f.get("/run/panel?name=steps&id=" + q(runningID))
	if code != 200 || !strings.Contains(body, `id="steps-table"`) || strings.Contains(body, "<html") {
		t.Fatalf("panel = %d %s", code, body)
	}
}

// With a token, every request needs it: tried as an attacker would.
func TestTokenRequired(t *testing.T) {
	const tok = "s3cret-token-value"
	f := newFixture(t, &explorer.Options{Token: tok})
	for _, c := range []struct {
		name string
		path string
		hdr  []string
		want int
	}{
		{"no token", "/runs", nil, 401},
		{"no token api", "/api/v1/runs", nil, 401},
		{"no token static", "/static/app.js", nil, 401},
		{"wrong bearer", "/api/v1/runs", []string{"Authorization", "Bearer nope"}, 401},
		{"prefix of token", "/api/v1/runs", []string{"Authorization", "Bearer s3cret"}, 401},
		{"token plus suffix", "/api/v1/runs", []string{"Authorization", "Bearer " + tok + "x"}, 401},
		{"other scheme", "/api/v1/runs", []string{"Authorization", "Token " + tok}, 401},
		{"basic scheme", "/api/v1/runs", []string{"Authorization", "Basic " + tok}, 401},
		{"no scheme", "/api/v1/runs", []string{"Authorization", tok}, 401},
		{"double space", "/api/v1/runs", []string{"Authorization", "Bearer  " + tok}, 401},
		{"empty bearer", "/api/v1/runs", []string{"Authorization", "Bearer "}, 401},
		{"wrong header with good query", "/api/v1/runs?token=" + tok, []string{"Authorization", "Bearer nope"}, 401},
		{"wrong query", "/api/v1/runs?token=nope", nil, 401},
		{"empty query", "/api/v1/runs?token=", nil, 401},
		{"wrong cookie", "/api/v1/runs", []string{"Cookie", explorer.TokenCookie + "=nope"}, 401},
		{"other header name", "/api/v1/runs", []string{"X-Token", tok}, 401},
		{"bearer", "/api/v1/runs", []string{"Authorization", "Bearer " + tok}, 200},
		{"bearer lower case", "/api/v1/runs", []string{"Authorization", "bearer " + tok}, 200},
		{"query", "/runs?token=" + q(tok), nil, 200},
		{"cookie", "/api/v1/runs", []string{"Cookie", explorer.TokenCookie + "=" + tok}, 200},
	} {
		code, body, h := f.get(c.path, c.hdr...)
		if code != c.want {
			t.Errorf("%s: GET %s = %d; want %d", c.name, c.path, code, c.want)
		}
		if code == 401 && (h.Get("WWW-Authenticate") == "" || strings.Contains(body, tok)) {
			t.Errorf("%s: 401 without WWW-Authenticate or echoing the token: %s", c.name, body)
		}
		if c.name == "query" && !strings.Contains(h.Get("Set-Cookie"), explorer.TokenCookie+"=") {
			t.Errorf("the token query did not set the cookie: %q", h.Get("Set-Cookie"))
		}
	}
}

// Without a configured token, a token query parameter sets nothing.
func TestNoTokenNoCookie(t *testing.T) {
	f := newFixture(t, nil)
	_, _, h := f.get("/runs?token=whatever")
	if strings.Contains(h.Get("Set-Cookie"), explorer.TokenCookie) {
		t.Fatal("a token cookie was set with no token configured")
	}
}

// Each request is logged (method, path, status), never its query: a
// token given as ?token= stays out of the log.
func TestRequestLogOmitsQuery(t *testing.T) {
	var buf syncBuffer
	f := newFixture(t, &explorer.Options{Token: "tok-in-query-77", Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if code, _, _ := f.get("/runs?token=tok-in-query-77"); code != 200 {
		t.Fatalf("GET = %d", code)
	}
	log := buf.String()
	if !strings.Contains(log, `"path":"/runs"`) || !strings.Contains(log, `"status":200`) || strings.Contains(log, "tok-in-query-77") {
		t.Fatalf("request log = %s", log)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
