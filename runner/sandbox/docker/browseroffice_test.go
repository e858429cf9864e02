package docker_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/internal/chromium/chromiumtest"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// TestBundleBrowserOfficeDocker runs the browser-office example bundle on
// Docker: the example's browser image is built FROM scratch with the
// host's Chromium, fonts and library closure (nothing pulled), and the
// scripted agent answers Dana through the webmail with the gateway's
// browser tools (browser_navigate, browser_screenshot, browser_read,
// browser_click, browser_type) and the sent mail is verified. The office
// is then deployed again and driven through the gateway: browser_read
// shows the seeded message and browser_screenshot returns a PNG.
func TestBundleBrowserOfficeDocker(t *testing.T) {
	chromiumtest.Need(t)
	p := engine(t)
	t.Cleanup(func() { p.Close() })
	rep, f := passBundleOnDocker(t, p, "browser-office")
	if rep.TornDown != 2 {
		t.Errorf("tore down %d, want the env and the agent", rep.TornDown)
	}

	// The registered office again, driven through the gateway directly:
	// on Docker the gateway keeps no object store, so the screenshot
	// comes back only in the tool result.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	start := time.Now()
	inst, err := f.Services.Deployer.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "browser-office"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("browser-office deployed on Docker in %s", time.Since(start).Round(time.Millisecond))
	defer f.Services.Deployer.Teardown(context.WithoutCancel(ctx), inst.InstanceID)
	gw := gwclient.NewWithControlToken(inst.GatewayURL, inst.ControlToken, nil)
	if err := gw.Server("email").AddData(ctx, []protocol.Part{protocol.DataPart(json.RawMessage(inbox))}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Data     string `json:"data"`
			MimeType string `json:"mimeType"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	call := func(tool string, args map[string]any) result {
		t.Helper()
		var r result
		err := gw.Do(ctx, http.MethodPost, "/step", "assistant", map[string]any{"action": "call_tool", "tool_name": tool, "arguments": args}, &r)
		if err != nil || r.IsError {
			t.Fatalf("%s %v: %v %+v", tool, args, err, r)
		}
		return r
	}
	call("browser_navigate", map[string]any{"website": "webmail", "path": "/"})
	if r := call("browser_read", map[string]any{}); len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, "Quarterly numbers") {
		t.Errorf("browser_read of the inbox: %+v", r)
	}
	var png []byte
	for _, c := range call("browser_screenshot", map[string]any{}).Content {
		if c.Type == "image" && c.MimeType == "image/png" {
			if png, err = base64.StdEncoding.DecodeString(c.Data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("browser_screenshot gave no PNG (%d bytes)", len(png))
	}
	if err := f.Services.Deployer.Teardown(ctx, inst.InstanceID); err != nil {
		t.Fatal(err)
	}
}

const inbox = `{"messages":[{"id":"m1","folder":"inbox","from":"dana@acme.example","to":["me@example.com"],
"subject":"Quarterly numbers","body":"Can you send me the Q3 numbers by Friday?","sent_at":"2026-01-05T09:00:00Z"}]}`
