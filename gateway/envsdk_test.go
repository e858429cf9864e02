package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

// startEnv starts a real envsdk env whose <name>_whoami tool reports the
// caller identity the env resolved.
func startEnv(t *testing.T, name string) *envsdktest.Env {
	t.Helper()
	s := envsdk.New(&protocol.EnvCard{Name: name}, &envsdk.Options{Getenv: func(string) string { return "" }})
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_whoami", Description: "Who is calling."},
		func(ctx context.Context, req *envsdk.Request, in struct{}) (string, error) {
			return fmt.Sprintf("role=%q session=%q", req.Caller.Role, req.Caller.Session), nil
		})
	s.HandleReset(func(context.Context) error { return nil })
	return envsdktest.Start(t, s)
}

// TestEnvsdkServersBehindGateway puts two real envsdk envs behind one
// gateway: merged tools, identity forwarded through _meta, the composed card
// with their rewritten cards, and the env-level data plane.
func TestEnvsdkServersBehindGateway(t *testing.T) {
	slack := startEnv(t, "slack")
	mail := startEnv(t, "mail")
	tg := startGateway(t, &Config{
		Servers:     []Server{{Name: "slack", URL: slack.MCPURL}, {Name: "mail", URL: mail.MCPURL}},
		RESTProxies: []Upstream{{Key: "mcp-slack", URL: slack.BaseURL}},
	}, nil)
	agent := tg.mcpClient(t, "analyst")
	if names := agent.toolNames(t); !slices.Equal(names, []string{"slack_whoami", "mail_whoami"}) {
		t.Fatalf("tools %v", names)
	}
	out := agent.call(t, "mail_whoami", map[string]any{})
	key := agent.c.GetTransport().GetSessionId()
	if out.IsError || out.text() != fmt.Sprintf("role=%q session=%q", "analyst", key) {
		t.Fatalf("identity seen by the env: %q (session %s)", out.text(), key)
	}
	// The default role normalises to no role; /step forwards no session.
	if out := tg.mcpClient(t, "").call(t, "slack_whoami", map[string]any{}); !strings.HasPrefix(out.text(), `role="" session="`) {
		t.Fatalf("default role: %q", out.text())
	}
	st, body := tg.post(t, "/step", role("cli"), `{"action":"call_tool","tool_name":"slack_whoami"}`)
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	json.Unmarshal(body, &res)
	if st != 200 || len(res.Content) != 1 || res.Content[0].Text != `role="cli" session=""` {
		t.Fatalf("/step identity %d %s", st, body)
	}
	// Card: the envsdk child is composed and rewritten.
	_, cb := tg.get(t, protocol.EnvCardPath, nil)
	card, err := protocol.DecodeEnvCard(cb)
	if err != nil {
		t.Fatal(err)
	}
	child := card.FindChild("slack")
	if child == nil || child.URL != "/svc/mcp-slack/agentenv" || child.FindTool("slack_whoami") == nil {
		t.Fatalf("composed child %+v", child)
	}
	// Data plane through the gateway to the single mcp-* child.
	_, dp := tg.post(t, "/agentenv", nil, `{"jsonrpc":"2.0","id":5,"method":"data/reset"}`)
	if string(dp) != `{"jsonrpc":"2.0","id":5,"result":{}}`+"\n" && string(dp) != `{"jsonrpc":"2.0","id":5,"result":{}}` {
		t.Fatalf("data/reset via gateway: %s", dp)
	}
	// And the child's own data plane through the proxy.
	_, dp = tg.post(t, "/svc/mcp-slack/agentenv", nil, `{"jsonrpc":"2.0","id":6,"method":"data/get"}`)
	if !strings.Contains(string(dp), `"code":-32601`) {
		t.Fatalf("data/get via proxy: %s", dp)
	}
}
