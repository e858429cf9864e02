package envdeploy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/internal/chromium/chromiumtest"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/gwclient"
	"github.com/agentenv/agentenv/runner/sandbox/process"
)

// inbox is the email env's seed: the same {"messages":[...]} artifact the
// email MCP env loads, shown by the webmail.
const inbox = `{"messages":[{"id":"m1","folder":"inbox","from":"dana@acme.example","to":["me@example.com"],
"subject":"Quarterly numbers","body":"Can you send me the Q3 numbers by Friday?","sent_at":"2026-01-05T09:00:00Z"}]}`

// TestBrowserOfficeProcess deploys the browser office on the process
// provider (the email server, the webmail website over it, and the
// website-browser behind one gateway), seeds the mailbox, lets a scripted
// computer-use agent reply through the browser tools alone, and checks
// the sent mail through the email server, as an env_outcome_verifier
// would; the screenshot it took is in the object store.
func TestBrowserOfficeProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("browser office: skipped in -short")
	}
	chromiumtest.Need(t)
	bins := envdeploytest.Build(t)
	st := envdeploytest.NewStores(t)
	ctx := context.Background()
	p := &envdeploy.Putter{Stores: st}
	for _, err := range []error{
		first(p.PutGateway(ctx, "default", envdeploy.ImageInput{Binary: bins.Gateway})),
		first(p.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "email", EnvironmentName: "email", Image: envdeploy.ImageInput{Binary: bins.Email}})),
		first(p.PutWebsite(ctx, envdeploy.WebsiteInput{ID: "webmail", EnvironmentName: "webmail", Image: envdeploy.ImageInput{Binary: bins.Webmail}})),
		first(p.PutWebsiteBrowser(ctx, envdeploy.BrowserInput{ID: "browser", Image: envdeploy.ImageInput{Binary: bins.Browser}})),
		first(p.PutMulti(ctx, envdeploy.MultiInput{ID: "office", MCPServers: []string{"email"}, Websites: []string{"webmail", "browser"}})),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	objects := filepath.Join(t.TempDir(), "objects")
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"process": process.New(t.TempDir(), nil)},
		ReadyTimeout: 90 * time.Second, ObjectStoreDir: objects}
	inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "office"}, Sandbox: "process"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Teardown(context.WithoutCancel(ctx), inst.InstanceID)
	if u := inst.WebsiteFrontendURLs["webmail"]; u != inst.GatewayURL+"/website/webmail/" {
		t.Fatalf("website_frontend_urls = %v", inst.WebsiteFrontendURLs)
	}
	gw := gwclient.NewWithControlToken(inst.GatewayURL, inst.ControlToken, nil)
	if err := gw.Server("email").AddData(ctx, []protocol.Part{protocol.DataPart(json.RawMessage(inbox))}); err != nil {
		t.Fatal(err)
	}

	// The scripted computer-use agent: it sees only the browser tools'
	// answers (text of browser_read, coordinates of elements).
	agent := func(tool string, args map[string]any) string {
		t.Helper()
		res, err := gw.CallTool(ctx, "assistant", tool, args)
		if err != nil || res.IsError {
			t.Fatalf("%s %v: %v %+v", tool, args, err, res)
		}
		return res.Text()
	}
	type element struct {
		Role, Name string
		X, Y       float64
	}
	read := func() (text string, els []element) {
		var pg struct {
			Text     string
			Elements []element
		}
		if err := json.Unmarshal([]byte(agent("browser_read", nil)), &pg); err != nil {
			t.Fatal(err)
		}
		return pg.Text, pg.Elements
	}
	click := func(role, name string) {
		_, els := read()
		for _, e := range els {
			if e.Role == role && strings.Contains(e.Name, name) {
				agent("browser_click", map[string]any{"x": e.X, "y": e.Y})
				return
			}
		}
		t.Fatalf("no %s %q in %+v", role, name, els)
	}
	var urls []string
	if err := json.Unmarshal([]byte(agent("list_website_urls", nil)), &urls); err != nil || len(urls) != 1 {
		t.Fatalf("list_website_urls: %v %v", urls, err)
	}
	agent("browser_navigate", map[string]any{"url": urls[0] + "/"})
	if text, _ := read(); !strings.Contains(text, "Quarterly numbers") {
		t.Fatalf("inbox page: %s", text)
	}
	click("link", "Quarterly numbers")
	click("textbox", "Reply text")
	agent("browser_type", map[string]any{"text": "Hi Dana, the Q3 numbers are attached. Best, me"})
	click("button", "Send reply")
	if text, _ := read(); !strings.Contains(text, "Message sent") {
		t.Fatalf("after Send reply: %s", text)
	}
	shot, err := gw.CallTool(ctx, "assistant", "browser_screenshot", nil)
	if err != nil || shot.IsError {
		t.Fatalf("screenshot: %v %+v", err, shot)
	}

	// The outcome, checked through the email server.
	sent, err := gw.CallTool(ctx, "verifier", "email_list_messages", map[string]any{"folder": "sent"})
	if err != nil || !strings.Contains(sent.Text(), `"subject":"Re: Quarterly numbers"`) || !strings.Contains(sent.Text(), "dana@acme.example") {
		t.Fatalf("sent folder: %v %+v", err, sent)
	}
	pngs, _ := filepath.Glob(filepath.Join(objects, "screenshots", "*", "*.png"))
	if len(pngs) != 1 {
		t.Fatalf("stored screenshots: %v", pngs)
	}
	if b, err := os.ReadFile(pngs[0]); err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Fatalf("screenshot file: %v", err)
	}
}

// A website that never becomes ready fails the deploy within its own
// ready timeout, naming the website, and leaves nothing running.
func TestWebsiteNeverReady(t *testing.T) {
	bins := envdeploytest.Build(t)
	st := envdeploytest.NewStores(t)
	ctx := context.Background()
	p := &envdeploy.Putter{Stores: st}
	for _, err := range []error{
		first(p.PutGateway(ctx, "default", envdeploy.ImageInput{Binary: bins.Gateway})),
		first(p.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "echo", EnvironmentName: "echo", Image: envdeploy.ImageInput{Binary: bins.Echo}})),
		first(p.PutWebsite(ctx, envdeploy.WebsiteInput{ID: "stuck", EnvironmentName: "stuck", ReadyTimeout: 2 * time.Second,
			Image: envdeploy.ImageInput{Binary: bins.Unready}})),
		first(p.PutMulti(ctx, envdeploy.MultiInput{ID: "site", MCPServers: []string{"echo"}, Websites: []string{"stuck"}})),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	proc := process.New(t.TempDir(), nil)
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"process": proc}, ReadyTimeout: 90 * time.Second}
	_, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "site"}, Sandbox: "process"})
	if err == nil || !strings.Contains(err.Error(), "website stuck (env stuck) not ready after 2s") || !strings.Contains(err.Error(), "status 503") {
		t.Fatalf("deploy: %v", err)
	}
	if gs := proc.Groups(); len(gs) != 0 {
		t.Fatalf("groups left: %v", gs)
	}
	// A website alone does not deploy: it belongs in a multi env.
	if _, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "stuck"}, Sandbox: "process"}); err == nil || !strings.Contains(err.Error(), "multi put --website stuck") {
		t.Fatalf("website alone: %v", err)
	}
}

func first[T any](_ T, err error) error { return err }
