package browser_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentenv/agentenv/gateway"
	"github.com/agentenv/agentenv/gateway/browser"
	"github.com/agentenv/agentenv/internal/chromium"
	"github.com/agentenv/agentenv/internal/chromium/chromiumtest"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry/fsobject"
)

// startChromium runs Debian's chromium for one test; it skips when the
// browser is not installed or in -short.
func startChromium(t testing.TB) *chromium.Process {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: skipped in -short")
	}
	bin := chromiumtest.Need(t)
	p, err := chromium.Start(context.Background(), &chromium.Options{Binary: bin, UserDataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// website is a page with a reply form; /send shows what was sent.
func website(t testing.TB) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Inbox</title><body style="margin:0">
<h1>Inbox</h1><form action="/send" method="post"><label>Reply <input id="reply" name="reply"></label>
<button type="submit">Send</button></form><div style="height:3000px"></div><p id="bottom">end of page</p></body>`)
	})
	mux.HandleFunc("POST /send", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Sent</title><p>Sent: %s</p>`, html.EscapeString(r.FormValue("reply")))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type roleRT struct {
	role string
	next http.RoundTripper
}

func (r roleRT) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(protocol.HeaderRole, r.role)
	return r.next.RoundTrip(req)
}

type env struct {
	gw      *httptest.Server
	objects *fsobject.Store
	traj    string
}

func newEnv(t testing.TB, cdpURL, siteURL string) *env {
	t.Helper()
	objects, err := fsobject.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := browser.New(cdpURL, &browser.Options{Objects: objects, Websites: map[string]string{"inbox": siteURL}})
	if err != nil {
		t.Fatal(err)
	}
	traj := filepath.Join(t.TempDir(), "trajectory.jsonl")
	g, err := gateway.New(&gateway.Config{TrajectoryFile: traj}, &gateway.Options{ToolSources: []gateway.ToolSource{src}})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	// Start returns at once and the gateway answers 503 until it has
	// started: wait for /readyz, as a deployer does.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if resp, err := http.Get(srv.URL + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("the gateway never became ready")
		case <-tick.C:
		}
	}
	return &env{gw: srv, objects: objects, traj: traj}
}

func (e *env) agent(t testing.TB, role string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "cu-agent", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.gw.URL + "/mcp",
		HTTPClient: &http.Client{Transport: roleRT{role, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t testing.TB, cs *sdk.ClientSession, tool string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

type page struct {
	URL, Title, Text string
	Elements         []struct {
		Role, Name string
		X, Y       float64
	}
}

func read(t testing.TB, cs *sdk.ClientSession) page {
	t.Helper()
	res := call(t, cs, "browser_read", nil)
	var p page
	if res.IsError || json.Unmarshal([]byte(text(res)), &p) != nil {
		t.Fatalf("browser_read: %s", text(res))
	}
	return p
}

func (p page) at(t testing.TB, role, name string) map[string]any {
	t.Helper()
	for _, e := range p.Elements {
		if e.Role == role && strings.Contains(e.Name, name) {
			return map[string]any{"x": e.X, "y": e.Y}
		}
	}
	t.Fatalf("no %s %q on %s: %+v", role, name, p.URL, p.Elements)
	return nil
}

// TestComputerUse drives a real headless Chromium through the gateway's
// tools like a computer-use agent: navigate, read, click by coordinates,
// type, submit, scroll, screenshot; checks the screenshot is a 1280×800 PNG
// stored in the object store and linked (not inlined) in the trajectory,
// that role rules apply, and that bad input is an isError naming the field.
func TestComputerUse(t *testing.T) {
	cr := startChromium(t)
	site := website(t)
	e := newEnv(t, cr.DevToolsURL, site.URL)
	cs := e.agent(t, "assistant")

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	want := "browser_screenshot browser_click browser_type browser_key browser_scroll browser_navigate browser_read"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("tools %q, want %q", got, want)
	}

	if res := call(t, cs, "browser_navigate", map[string]any{"url": site.URL + "/"}); res.IsError {
		t.Fatalf("navigate: %s", text(res))
	}
	p := read(t, cs)
	if p.Title != "Inbox" || !strings.Contains(p.Text, "Inbox") {
		t.Fatalf("read: %+v", p)
	}
	call(t, cs, "browser_click", p.at(t, "textbox", "Reply"))
	if res := call(t, cs, "browser_type", map[string]any{"text": "on my way"}); res.IsError {
		t.Fatalf("type: %s", text(res))
	}
	call(t, cs, "browser_click", p.at(t, "button", "Send"))
	if p := read(t, cs); p.Title != "Sent" || !strings.Contains(p.Text, "Sent: on my way") {
		t.Fatalf("after Send: %+v", p)
	}

	// Keys: Enter submits the form too. Websites open by name.
	call(t, cs, "browser_navigate", map[string]any{"website": "inbox", "path": "/"})
	call(t, cs, "browser_type", map[string]any{"selector": "#reply", "text": "by key"})
	call(t, cs, "browser_key", map[string]any{"key": "Enter"})
	if p := read(t, cs); !strings.Contains(p.Text, "Sent: by key") {
		t.Fatalf("after Enter: %+v", p)
	}

	// Scroll: the bottom paragraph comes into view.
	call(t, cs, "browser_navigate", map[string]any{"url": site.URL + "/"})
	t.Log(text(call(t, cs, "browser_scroll", map[string]any{"dy": 5000})))
	for _, el := range read(t, cs).Elements {
		if el.Name == "Send" {
			t.Fatalf("the Send button is still in view after scrolling down: %+v", el)
		}
	}

	res := call(t, cs, "browser_screenshot", nil)
	if res.IsError || len(res.Content) != 2 {
		t.Fatalf("screenshot: %+v", res)
	}
	img, ok := res.Content[0].(*sdk.ImageContent)
	if !ok || img.MIMEType != "image/png" {
		t.Fatalf("screenshot content %T", res.Content[0])
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(img.Data))
	if err != nil || cfg.Width != 1280 || cfg.Height != 800 {
		t.Fatalf("screenshot %dx%d: %v", cfg.Width, cfg.Height, err)
	}
	link, ok := res.Content[1].(*sdk.ResourceLink)
	if !ok || link.MIMEType != "image/png" {
		t.Fatalf("screenshot link %T", res.Content[1])
	}
	rc, info, err := e.objects.Open(context.Background(), link.Name)
	if err != nil {
		t.Fatalf("stored screenshot %s: %v", link.Name, err)
	}
	rc.Close()
	if info.Size != int64(len(img.Data)) || info.URL != link.URI {
		t.Fatalf("stored %+v, link %+v", info, link)
	}

	// Roles: a role with browser_click disabled is refused.
	body := `{"role":"viewer","tools":["browser_click"]}`
	if r, err := http.Post(e.gw.URL+"/tools/disable", "application/json", strings.NewReader(body)); err != nil || r.StatusCode != 200 {
		t.Fatalf("disable: %v %v", r, err)
	}
	viewer := e.agent(t, "viewer")
	if res := call(t, viewer, "browser_click", map[string]any{"x": 1, "y": 1}); !res.IsError || !strings.Contains(text(res), "disabled") {
		t.Fatalf("viewer click: %s", text(res))
	}

	// Bad input names the field; nothing outside http(s) opens.
	for tool, args := range map[string]map[string]any{
		"browser_navigate": {"url": "file:///etc/passwd"},
		"browser_read":     {"website": "inbox"},
		"browser_click":    {"x": 3},
		"browser_key":      {"key": "Hyperdrive"},
		"browser_scroll":   {"dy": "down"},
		"browser_type":     {"selector": "#reply"},
	} {
		res := call(t, cs, tool, args)
		field := map[string]string{"browser_read": "arguments", "browser_navigate": "url", "browser_click": "x", "browser_key": "key", "browser_scroll": "dy", "browser_type": "text"}[tool]
		if !res.IsError || !strings.HasPrefix(text(res), field) {
			t.Errorf("%s %v: %q, want an isError naming %s", tool, args, text(res), field)
		}
	}

	// The trajectory links the screenshot and holds none of its bytes.
	cs.Close()
	viewer.Close()
	traj := waitTrajectory(t, e, "browser_screenshot")
	if !strings.Contains(traj, link.URI) || strings.Contains(traj, base64.StdEncoding.EncodeToString(img.Data)[:200]) {
		t.Fatalf("trajectory does not link the screenshot (or inlines it)")
	}
}

// waitTrajectory reads GET /trajectory until a tool_call_result of tool is
// there (the writer is asynchronous).
func waitTrajectory(t testing.TB, e *env, tool string) string {
	t.Helper()
	r, err := http.Get(e.gw.URL + "/trajectory")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(r.Body)
	if !strings.Contains(b.String(), `"resource_link"`) {
		data, _ := os.ReadFile(e.traj)
		t.Fatalf("trajectory has no screenshot link:\n%s\nfile:\n%.2000s", b.String(), data)
	}
	return b.String()
}
