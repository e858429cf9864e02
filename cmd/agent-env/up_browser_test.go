package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
)

// The browser tests (the slow "browser" group) drive a headless Chromium
// from Debian's chromium package through the DevTools protocol against a
// real `agent-env up`. They skip when chromium is not installed.

func chromiumPath(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: skipped in -short")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("browser test: chromium is not installed (apt-get install -y chromium)")
	return ""
}

// upServer runs `agent-env up` (on a free loopback port unless args say
// otherwise) until the test ends, and returns the link it printed.
func upServer(t *testing.T, c *cli, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := newSyncBuffer(), newSyncBuffer()
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, append([]string{"up", "--addr", "127.0.0.1:0", "--no-gateway"}, args...), c.deps(out, errb))
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("agent-env up exited %d: %s", code, errb.String())
		}
	})
	out.waitFor(t, "Explorer on ")
	m := regexp.MustCompile(`Explorer on (http://\S+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no address in %q", out.String())
	}
	return m[1]
}

// seedAgentRun stores, next to what the bundle run wrote, a finished
// agent run with verifier scores and an agent trajectory (the example
// bundles that prompt an agent need Docker to build their env), and a
// running instance the test then finishes.
func seedAgentRun(t *testing.T, c *cli) (runID, liveID string, finish func()) {
	t.Helper()
	ctx := context.Background()
	root := filepath.Join(c.stateRoot, "agent-env")
	docs, err := sqlite.Open(ctx, filepath.Join(root, "document_store", "documents.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = docs.Close() })
	objs, err := fsobject.New(filepath.Join(root, "object_store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	key := "prompt_agent_trajectories/@local/browser/q3/q3-b1/prompt_id=q3/trajectory.json"
	traj := `[{"type":"tool_call","name":"email_search","arguments":{"query":"Q3"},"step":0},
{"type":"tool_result","name":"email_search","text":"{\"messages\":[{\"id\":\"m1\",\"subject\":\"Q3 report\"}]}","is_error":false,"step":0},
{"type":"tool_call","name":"email_send_message","arguments":{"to":["alice@example.com"],"subject":"Re: Q3 report"},"step":1},
{"type":"tool_result","name":"email_send_message","text":"sent","is_error":false,"step":1},
{"type":"final","text":"I replied to Alice: the Q3 numbers are final."}]`
	if _, err := objs.Put(ctx, key, strings.NewReader(traj), nil); err != nil {
		t.Fatal(err)
	}
	// The env's gateway trajectory, as the runner stores it at the end of
	// a run: the agent's two calls, a trigger firing between them.
	gwKey := "env_trajectories/@local/browser/q3/q3-b1/email.jsonl"
	gwTraj := `{"event_type":"tool_call","event_id":"event_1","timestamp_utc":"2026-03-02T09:00:01.000000+00:00","virtual_time":"2026-03-02T09:00:00Z","role":"assistant","tool_call":{"function_name":"email_search","arguments":{"query":"Q3"}}}
{"event_type":"tool_call_result","event_id":"event_2","timestamp_utc":"2026-03-02T09:00:01.120000+00:00","virtual_time":"2026-03-02T09:00:00Z","tool_call_event_id":"event_1","tool_call_result":{"content":[{"type":"text","text":"1 message"}],"isError":false}}
{"event_type":"trigger_fired","event_id":"event_3","timestamp_utc":"2026-03-02T09:00:02.000000+00:00","virtual_time":"2026-03-02T10:00:00Z","trigger_id":"boss-mail"}
{"event_type":"tool_call","event_id":"event_4","timestamp_utc":"2026-03-02T09:00:03.000000+00:00","virtual_time":"2026-03-02T10:00:01Z","role":"assistant","tool_call":{"function_name":"email_send_message","arguments":{"to":["alice@example.com"]}}}
{"event_type":"tool_call_result","event_id":"event_5","timestamp_utc":"2026-03-02T09:00:03.300000+00:00","virtual_time":"2026-03-02T10:00:01Z","tool_call_event_id":"event_4","tool_call_result":{"content":[{"type":"text","text":"sent"}],"isError":false}}
`
	if _, err := objs.Put(ctx, gwKey, strings.NewReader(gwTraj), nil); err != nil {
		t.Fatal(err)
	}
	put := func(c registry.Collection, id, body string) {
		if _, err := docs.Put(ctx, c, id, json.RawMessage(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(c registry.Collection, id, body string) {
		if _, err := docs.UpsertRecord(ctx, c, id, json.RawMessage(body)); err != nil {
			t.Fatal(err)
		}
	}
	task := "@local/browser/q3"
	put(registry.Tasks, task, `{"type":"task","steps":[{"id":"agent","type":"deploy_agent"},{"id":"prompt","type":"prompt_agent"},{"id":"check","type":"env_outcome_verifier"}]}`)
	put(registry.Evals, "@local/browser/weekly", `{"type":"eval","tasks":[{"task_id":"@local/browser/q3","version":1}]}`)
	inst := func(id, status string, done []string, ctxJSON string) string {
		steps := make([]string, len(done))
		for i, s := range done {
			steps[i] = fmt.Sprintf(`{"step_id":%q,"status":"success"}`, s)
		}
		return fmt.Sprintf(`{"instance_id":%q,"task_id":%q,"task_version":1,"total_steps":3,"created_at_utc":"2026-03-02 09:00 UTC","rev":%d,
"status":%q,"error":null,"current_step":%d,"completed_steps":[%s],"context":%s}`, id, task, len(done), status, len(done), strings.Join(steps, ","), ctxJSON)
	}
	runID, liveID = task+"/q3-b1", task+"/q3-live"
	rec(registry.TaskInstances, runID, inst(runID, "completed", []string{"agent", "prompt", "check"}, `{
"prompt_responses":[{"step_id":"prompt","prompt_id":"q3","prompt_text":"Reply to Alice","response":"I replied to Alice.","tool_call_count":2,
"agent_trajectory_object_url":"`+objs.URL(key)+`"}],
"metadata":{"env_trajectories":{"email":{"env_id":"email","object_key":"`+gwKey+`","object_url":"`+objs.URL(gwKey)+`","bytes":`+fmt.Sprint(len(gwTraj))+`}},
"eval_id":"@local/browser/weekly","run_group_id":"browser-g1","verifications":{"sent_reply":{"score":1,"results":[
{"criterion":"a reply to Alice is in the sent folder","result":true,"score":1,"justification":"found Re: Q3 report"}]}}}}`))
	for i, st := range []string{"agent", "prompt", "check"} {
		rec(registry.TaskStepJournal, runID+"|"+st, fmt.Sprintf(`{"instance_id":%q,"step_id":%q,"seq":%d,"status":"success",
"recorded_at":"2026-03-02T09:00:%02d+00:00","ops":{"sets":[{"path":["%s_done"],"value":true}]}}`, runID, st, i+1, 2*i+2, st))
	}
	rec(registry.TaskInstances, liveID, inst(liveID, "running", []string{"agent"}, `{"metadata":{}}`))
	finish = func() {
		rec(registry.TaskInstances, liveID, inst(liveID, "completed", []string{"agent", "prompt", "check"},
			`{"metadata":{"verifications":{"sent_reply":{"score":1,"results":[]}}}}`))
	}
	return runID, liveID, finish
}

func TestBrowserExplorer(t *testing.T) {
	chrome := chromiumPath(t)
	c := newCLI(t)
	if code, out, errs := c.run("run", "hello", "--sandbox", "process"); code != 0 {
		t.Fatalf("run hello = %d\n%s\n%s", code, out, errs)
	}
	runID, liveID, finish := seedAgentRun(t, c)
	base := strings.TrimSuffix(upServer(t, c), "/")

	b := newBrowser(t, chrome)
	ctx, do, text, count, shot := b.ctx, b.do, b.text, b.count, b.shot
	type css = chromedp.CSS

	// Runs list: the bundle's run and the seeded ones.
	do("runs list", chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(css("#runs-table")), shot("runs"))
	// The console listener works: a probe error is seen, then forgotten.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`console.error("probe")`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.reported:
	case <-ctx.Done():
		t.Fatal("the console listener never saw the probe error")
	}
	b.mu.Lock()
	if len(b.consoleErrors) != 1 || !strings.Contains(b.consoleErrors[0], "probe") {
		t.Fatalf("console errors after the probe = %q", b.consoleErrors)
	}
	b.consoleErrors = nil
	b.mu.Unlock()
	if n := count("tr.run-row"); n != 3 {
		t.Errorf("runs list has %d rows; want 3 (hello, the agent run, the live run)", n)
	}
	do("hello run", chromedp.Click(css(`a.run-link[href*="hello"]`)), chromedp.WaitVisible(css("#steps-table")), shot("run_hello"))
	if s := text("#run-status"); s != "completed" {
		t.Errorf("hello run status = %q", s)
	}
	// Run → step → trajectory.
	do("agent run", chromedp.Navigate(base+"/run?id="+url.QueryEscape(runID)), chromedp.WaitVisible(css("svg.dag")),
		chromedp.WaitVisible(css(".verifier-row")), shot("run"))
	do("step", chromedp.Click(css(`svg.dag a[href="#step-prompt"]`)),
		chromedp.Click(css(`#step-prompt details.diff summary`)), chromedp.WaitVisible(css(`#step-prompt table.ctxdiff`)))
	do("trajectory", chromedp.Click(css("a.trajectory-link")), chromedp.WaitVisible(css("#chat")),
		chromedp.Click(css(`#chat details.toolcall summary`)), chromedp.WaitVisible(css(`#chat pre.result`)), shot("trajectory"))
	if s := text("#chat"); !strings.Contains(s, "email_search") || !strings.Contains(s, "I replied to Alice") {
		t.Errorf("trajectory text = %q", s)
	}
	do("trajectory search", chromedp.SendKeys(css(`#trajectory-search input[name="q"]`), "alice"),
		// The search page, not the one the form was on: it names its query.
		chromedp.Submit(css(`#trajectory-search input[name="q"]`)), chromedp.WaitVisible(css(`#trajectory-panel[data-query="alice"] #chat`)))
	if n := count("#chat > li"); n != 2 {
		t.Errorf("search for alice shows %d entries; want 2", n)
	}
	// The agent's and the gateway's trajectories on one timeline.
	do("timeline", chromedp.Navigate(base+"/run?id="+url.QueryEscape(runID)), chromedp.Click(css("a.timeline-link")),
		chromedp.WaitVisible(css("#timeline")), chromedp.Click(css(`#timeline details.toolcall summary`)), shot("timeline"))
	if s := text("#timeline"); !strings.Contains(s, "agent+gateway") || !strings.Contains(s, "trigger_fired") || !strings.Contains(s, "120 ms") {
		t.Errorf("timeline text = %q", s)
	}
	// Every other page, with its key element.
	for _, p := range []struct{ name, path, sel string }{
		{"evals", "/evals", "#evals-table"},
		{"eval", "/eval?id=" + url.QueryEscape("@local/browser/weekly"), "svg.hist"},
		{"registry", "/registry?collection=tasks", "#docs-table"},
		{"versions", "/registry/versions?collection=tasks&id=" + url.QueryEscape("@local/browser/q3"), "#latest-json"},
		{"envs", "/envs", "#envs-panel"},
		{"trajectory_missing", "/trajectory?key=nope.json", "#trajectory-error"},
	} {
		do(p.name, chromedp.Navigate(base+p.path), chromedp.WaitVisible(css(p.sel)), shot(p.name))
	}
	// A live run updates without a reload.
	do("live run", chromedp.Navigate(base+"/run?id="+url.QueryEscape(liveID)), chromedp.WaitVisible(css("#live-badge")), shot("run_live"))
	if s := text("#run-steps"); s != "1/3" {
		t.Errorf("live run steps = %q; want 1/3", s)
	}
	// A marker a reload would wipe.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__notReloaded = 1`)); err != nil {
		t.Fatal(err)
	}
	finish()
	do("live update", chromedp.WaitVisible(css(`#run[data-ended="1"]`)), shot("run_live_done"))
	if s := text("#run-status"); s != "completed" {
		t.Errorf("live run status after the update = %q; want completed", s)
	}
	if s := text("#run-steps"); s != "3/3" {
		t.Errorf("live run steps after the update = %q; want 3/3", s)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__notReloaded || 0`)); err != nil || n != 1 {
		t.Errorf("the live run page reloaded (%v); want panels swapped in place", err)
	}
	b.checkConsole()
}

// browser is a headless Chromium for one test; any console error or
// uncaught exception fails the test (checkConsole).
type browser struct {
	t   *testing.T
	ctx context.Context
	// shots is the folder screenshots are saved in.
	shots string

	mu            sync.Mutex
	consoleErrors []string
	// reported gets a value when a console error is recorded.
	reported chan struct{}
}

func newBrowser(t *testing.T, chrome string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(cancelCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(cancelTimeout)
	b := &browser{t: t, ctx: ctx, shots: t.ArtifactDir(), reported: make(chan struct{}, 1)}
	listenErr := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		n := len(b.consoleErrors)
		defer func() {
			if len(b.consoleErrors) > n {
				select {
				case b.reported <- struct{}{}:
				default:
				}
			}
		}()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				b.consoleErrors = append(b.consoleErrors, "console.error "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			b.consoleErrors = append(b.consoleErrors, "exception: "+e.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				b.consoleErrors = append(b.consoleErrors, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		}
	})
	if listenErr != nil {
		t.Fatal(listenErr)
	}
	return b
}

// shot saves a full-page screenshot as name.png in the artifact folder.
func (b *browser) shot(name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		png, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.Void{}, os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644)
	}
}

func (b *browser) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", step, err)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func (b *browser) count(sel string) int {
	b.t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(sel)+`).length`))
	if err != nil {
		b.t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

// checkConsole fails the test on every console error seen.
func (b *browser) checkConsole() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.consoleErrors {
		b.t.Errorf("JavaScript console: %s", e)
	}
	b.t.Logf("screenshots in %s", b.shots)
}

// TestBrowserEnvLive deploys the echo env on the process sandbox (a real
// gateway and server), opens its live page from the env list with
// --allow-control, disables a tool for a role and sets the clock with the
// page's buttons, and checks the page shows each change.
func TestBrowserEnvLive(t *testing.T) {
	chrome := chromiumPath(t)
	bins := envdeploytest.Build(t)
	c := newCLI(t)
	if code, out, errb := c.run("env", "gateway", "put", "--binary", bins.Gateway); code != 0 {
		t.Fatalf("gateway put: %s %s", out, errb)
	}
	if code, out, errb := c.run("env", "mcp-server", "put", "--id", "echo", "--binary", bins.Echo, "--environment-name", "echo"); code != 0 {
		t.Fatalf("mcp-server put: %s %s", out, errb)
	}
	code, out, errb := c.run("env", "deploy", "--id", "echo", "--sandbox", "process", "--ttl-seconds", "600")
	m := instanceIDRe.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("deploy: %d %s %s", code, out, errb)
	}
	id := m[1]
	t.Cleanup(func() {
		if code, out, errb := c.run("env", "teardown", "--instance-id", id); code != 0 {
			t.Errorf("teardown: %d %s %s", code, out, errb)
		}
	})
	base := strings.TrimSuffix(upServer(t, c, "--allow-control"), "/")
	b := newBrowser(t, chrome)
	type css = chromedp.CSS

	b.do("env list", chromedp.Navigate(base+"/envs"), chromedp.WaitVisible(css("#envs-table")), b.shot("envs_live"))
	b.do("env page", chromedp.Click(css(`a.env-link[href*="`+id+`"]`)), chromedp.WaitVisible(css("#tools-table")),
		chromedp.WaitVisible(css("#clock-panel")), chromedp.WaitVisible(css("#triggers-panel")), chromedp.WaitVisible(css("#data-panel")),
		b.shot("env_live"))
	if s := b.text("#tools-table"); !strings.Contains(s, "echo_echo") {
		t.Errorf("tools table = %q; want echo_echo", s)
	}
	if b.count("#clock-unarmed") != 1 || b.count("#triggers-empty") != 1 {
		t.Errorf("a fresh instance should show an unarmed clock and no triggers")
	}
	// Show a role, then disable echo_echo for it with its button.
	b.do("show role", chromedp.SendKeys(css(`#role-view input[name="role"]`), "analyst"), chromedp.Submit(css(`#role-view input[name="role"]`)),
		chromedp.WaitVisible(css(`button[data-role="analyst"][data-tool="echo_echo"]`)))
	b.do("disable", chromedp.Click(css(`button[data-role="analyst"][data-tool="echo_echo"]`)), chromedp.WaitVisible(css("#env-done")))
	if s := b.text(`button[data-role="analyst"][data-tool="echo_echo"]`); s != "Enable" {
		t.Errorf("after disabling, the analyst's button says %q; want Enable", s)
	}
	if s := b.text(`button[data-role="default"][data-tool="echo_echo"]`); s != "Disable" {
		t.Errorf("the default role's button says %q; want Disable (only analyst changed)", s)
	}
	// Set the clock with the form.
	b.do("set clock", chromedp.SendKeys(css(`#clock-form input[name="virtual_time"]`), "2026-03-02T09:00:00Z"),
		chromedp.SendKeys(css(`#clock-form input[name="rate"]`), "0"), chromedp.Submit(css(`#clock-form input[name="virtual_time"]`)),
		chromedp.WaitVisible(css("#clock-table")), b.shot("env_live_changed"))
	if s := b.text("#clock-time"); !strings.HasPrefix(s, "2026-03-02T09:00:00") {
		t.Errorf("clock after set = %q", s)
	}
	b.checkConsole()
}
