package envsdk_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

// The server accepts 2025-11-25, 2025-06-18 and 2025-03-26 and never
// offers 2026-07-28: an unpinned go-sdk client (which prefers 2026-07-28)
// lands on 2025-11-25. serverInfo.name is the card name.
func TestProtocolVersionsAndServerInfo(t *testing.T) {
	s, _ := itemsServer(t, &envsdk.Options{Getenv: func(k string) string {
		if k == "ENVIRONMENT_NAME" {
			return "renamed"
		}
		return ""
	}})
	env := envsdktest.Start(t, s)
	for _, pin := range []string{"", "2025-11-25", "2025-06-18", "2025-03-26"} {
		c := sdk.NewClient(&sdk.Implementation{Name: "interop", Version: "0"}, nil)
		var opts *sdk.ClientSessionOptions
		if pin != "" {
			opts = &sdk.ClientSessionOptions{ProtocolVersion: pin}
		}
		cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: env.MCPURL}, opts)
		if err != nil {
			t.Fatalf("pin %q: %v", pin, err)
		}
		want := pin
		if want == "" {
			want = "2025-11-25"
		}
		ir := cs.InitializeResult()
		if ir.ProtocolVersion != want || ir.ServerInfo.Name != "renamed" {
			t.Errorf("pin %q: negotiated %q, serverInfo %q", pin, ir.ProtocolVersion, ir.ServerInfo.Name)
		}
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "renamed_add_item", Arguments: map[string]any{"item": "x"}})
		if err != nil || res.IsError {
			t.Errorf("pin %q: call %v %+v", pin, err, res)
		}
		_ = cs.Close()
	}
}

// Host-header protection is off: a request naming another host (as a
// gateway reaching http://slack:18765/mcp does) is served.
func TestForeignHostHeaderAccepted(t *testing.T) {
	s, _ := itemsServer(t, nil)
	env := envsdktest.Start(t, s)
	req, _ := http.NewRequest(http.MethodPost, env.MCPURL, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`))
	req.Host = "slack:18765"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("foreign Host: %d", resp.StatusCode)
	}
}

func TestMaxBodyFromEnvironment(t *testing.T) {
	s, _ := itemsServer(t, &envsdk.Options{Getenv: func(k string) string {
		if k == envsdk.EnvMaxBodyBytes {
			return "1000"
		}
		return ""
	}})
	env := envsdktest.Start(t, s)
	got := postRPC(t, env.DataURL, `{"jsonrpc":"2.0","id":1,"method":"data/add","params":{"parts":[{"kind":"text","text":"`+strings.Repeat("y", 2000)+`"}]}}`)
	e := got.(map[string]any)["error"].(map[string]any)
	if e["code"].(float64) != protocol.CodeInvalidRequest || e["data"].(map[string]any)["detail"] != "body exceeds 1000 bytes" {
		t.Fatalf("%v", got)
	}
}
