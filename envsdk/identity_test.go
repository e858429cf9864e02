package envsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

type whoIn struct {
	Note string `json:"note,omitempty"`
}

type whoOut struct {
	Role      string          `json:"role"`
	RawRole   string          `json:"raw_role"`
	Session   string          `json:"session"`
	Tool      string          `json:"tool"`
	CallID    string          `json:"call_id"`
	Transport string          `json:"transport"`
	Args      json.RawMessage `json:"args"`
}

// whoServer has a tool echoing the caller and a hook that refuses the
// role "intruder", fails for "broken" and panics for "panicky".
func whoServer(t testing.TB) (*envsdk.Server, *atomic.Int64, *atomic.Int64) {
	var ran, hooked atomic.Int64
	s := envsdk.New(&protocol.EnvCard{Name: "who"}, &envsdk.Options{Getenv: noEnv})
	envsdk.AddTool(s, &envsdk.Tool{Name: "whoami", Description: "Echo the caller."},
		func(ctx context.Context, req *envsdk.Request, in whoIn) (whoOut, error) {
			ran.Add(1)
			tc := envsdk.ToolContextFrom(ctx)
			if tc.CallID != req.CallID || tc.Caller != req.Caller {
				return whoOut{}, errors.New("request and context disagree")
			}
			return whoOut{Role: tc.Caller.Role, RawRole: tc.Caller.RawRole, Session: tc.Caller.Session,
				Tool: tc.Tool, CallID: tc.CallID, Transport: tc.Transport, Args: tc.Arguments}, nil
		})
	s.OnToolCall(func(ctx context.Context, tc envsdk.ToolContext) (*envsdk.ToolResult, error) {
		hooked.Add(1)
		switch tc.Caller.Role {
		case "intruder":
			return envsdk.Refusal("Tool 'whoami' is disabled for role 'intruder'"), nil
		case "broken":
			return nil, errors.New("policy store unavailable")
		case "panicky":
			panic("hook bug")
		}
		return nil, nil
	})
	return s, &ran, &hooked
}

func decodeWho(t *testing.T, res envsdktest.Result) whoOut {
	t.Helper()
	if res.IsError {
		t.Fatalf("isError: %s", res.Text)
	}
	var w whoOut
	if err := json.Unmarshal(res.Structured, &w); err != nil {
		t.Fatalf("structured %s: %v", res.Structured, err)
	}
	return w
}

func TestIdentityMCPGo(t *testing.T) {
	s, _, _ := whoServer(t)
	env := envsdktest.Start(t, s)
	agent := env.NewClient(t, map[string]string{"AgentEnv-Role": "agent-a"})
	dflt := env.NewClient(t, map[string]string{"AgentEnv-Role": "default"})
	blank := env.NewClient(t, map[string]string{"AgentEnv-Role": "  "})
	ctx := context.Background()
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)

	cases := []struct {
		name    string
		c       func() (string, any)
		meta    map[string]any
		role    string
		raw     string
		session string // "MCP" = the connection's Mcp-Session-Id
	}{
		{"header role, MCP session", func() (string, any) { return agent.GetSessionId(), agent }, nil, "agent-a", "agent-a", "MCP"},
		{"header role, _meta session without role key", func() (string, any) { return agent.GetSessionId(), agent },
			map[string]any{protocol.MetaSession: "s-meta"}, "agent-a", "agent-a", "s-meta"},
		{"_meta role beats header", func() (string, any) { return agent.GetSessionId(), agent },
			map[string]any{protocol.MetaRole: "alice", protocol.MetaSession: "s1"}, "alice", "alice", "s1"},
		{"forwarded without session: Mcp-Session-Id not used", func() (string, any) { return agent.GetSessionId(), agent },
			map[string]any{protocol.MetaRole: "alice"}, "alice", "alice", ""},
		{"_meta default is no role", func() (string, any) { return agent.GetSessionId(), agent },
			map[string]any{protocol.MetaRole: "default", protocol.MetaSession: "s2"}, "", "default", "s2"},
		{"_meta null role is no role, headers ignored", func() (string, any) { return agent.GetSessionId(), agent },
			map[string]any{protocol.MetaRole: nil}, "", "", ""},
		{"_meta non-string role", func() (string, any) { return agent.GetSessionId(), agent },
			map[string]any{protocol.MetaRole: 42}, "", "42", ""},
		{"_meta empty session string falls to empty", func() (string, any) { return agent.GetSessionId(), agent },
			map[string]any{protocol.MetaRole: "x", protocol.MetaSession: ""}, "x", "x", ""},
		{"header default", func() (string, any) { return dflt.GetSessionId(), dflt }, nil, "", "default", "MCP"},
		// HTTP trims header whitespace, so a blank header arrives empty.
		{"header blank", func() (string, any) { return blank.GetSessionId(), blank }, nil, "", "", "MCP"},
		{"no header", func() (string, any) { return env.Client.GetSessionId(), env.Client }, nil, "", "", "MCP"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sid, cl := c.c()
			res, err := envsdktest.CallTool(ctx, cl.(*client.Client), "whoami", map[string]any{"note": "n"}, c.meta)
			if err != nil {
				t.Fatal(err)
			}
			w := decodeWho(t, res)
			want := c.session
			if want == "MCP" {
				want = sid
				if sid == "" {
					t.Fatal("client has no session id")
				}
			}
			if w.Role != c.role || w.RawRole != c.raw || w.Session != want {
				t.Fatalf("got role %q raw %q session %q; want %q %q %q", w.Role, w.RawRole, w.Session, c.role, c.raw, want)
			}
			if w.Tool != "whoami" || w.Transport != "mcp" || !hex32.MatchString(w.CallID) || string(w.Args) != `{"note":"n"}` {
				t.Fatalf("context = %+v", w)
			}
		})
	}
}

func TestConcurrentCallsNeverCross(t *testing.T) {
	s, _, _ := whoServer(t)
	env := envsdktest.Start(t, s)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			role, sess := fmt.Sprintf("role-%d", i), fmt.Sprintf("sess-%d", i)
			res, err := envsdktest.CallTool(context.Background(), env.Client, "whoami", map[string]any{},
				map[string]any{protocol.MetaRole: role, protocol.MetaSession: sess})
			if err != nil {
				errs <- err
				return
			}
			var w whoOut
			_ = json.Unmarshal(res.Structured, &w)
			if w.Role != role || w.Session != sess {
				errs <- fmt.Errorf("call %d saw %q/%q", i, w.Role, w.Session)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestHook(t *testing.T) {
	s, ran, hooked := whoServer(t)
	env := envsdktest.Start(t, s)
	ctx := context.Background()
	cases := []struct{ role, text string }{
		{"intruder", "Tool 'whoami' is disabled for role 'intruder'"},
		{"broken", "policy store unavailable"},
		{"panicky", "on_tool_call hook panicked: hook bug"},
	}
	for _, c := range cases {
		res, err := envsdktest.CallTool(ctx, env.Client, "whoami", map[string]any{}, map[string]any{protocol.MetaRole: c.role})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || res.Text != c.text || res.Structured != nil {
			t.Fatalf("%s: %+v", c.role, res)
		}
	}
	if ran.Load() != 0 || hooked.Load() != 3 {
		t.Fatalf("tool ran %d times, hook %d", ran.Load(), hooked.Load())
	}
	// Refused by header role too; the hook does not run for unknown tools.
	c := env.NewClient(t, map[string]string{"AgentEnv-Role": "intruder"})
	if res, _ := envsdktest.CallTool(ctx, c, "whoami", map[string]any{}, nil); !res.IsError {
		t.Fatalf("header intruder allowed: %+v", res)
	}
	if res, _ := envsdktest.CallTool(ctx, c, "missing", map[string]any{}, nil); !res.IsError || res.Text != "Unknown tool: missing" {
		t.Fatalf("unknown = %+v", res)
	}
	if hooked.Load() != 4 || ran.Load() != 0 {
		t.Fatalf("tool ran %d times, hook %d", ran.Load(), hooked.Load())
	}
	if _, err := envsdktest.CallTool(ctx, env.Client, "whoami", map[string]any{}, nil); err != nil || ran.Load() != 1 {
		t.Fatalf("allowed call: err %v ran %d", err, ran.Load())
	}
}

// headerRT adds headers to every request of the go-sdk client.
type headerRT struct {
	h    map[string]string
	next http.RoundTripper
}

func (rt headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range rt.h {
		r.Header.Set(k, v)
	}
	return rt.next.RoundTrip(r)
}

func goSDKSession(t *testing.T, url string, headers map[string]string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "interop", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: headerRT{h: headers, next: http.DefaultTransport}},
	}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("go-sdk connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("negotiated %q", v)
	}
	return cs
}

func TestGoSDKClient(t *testing.T) {
	s, items := itemsServer(t, nil)
	envsdk.AddTool(s, &envsdk.Tool{Name: "whoami"}, func(ctx context.Context, req *envsdk.Request, in whoIn) (whoOut, error) {
		c := envsdk.CallerFrom(ctx)
		return whoOut{Role: c.Role, RawRole: c.RawRole, Session: c.Session}, nil
	})
	env := envsdktest.Start(t, s)
	cs := goSDKSession(t, env.MCPURL, map[string]string{"AgentEnv-Role": "agent-b"})
	ctx := context.Background()

	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lt.Tools) != 2 || lt.Tools[0].Name != "items_add_item" || lt.Tools[0].Description != "Add an item to the store." {
		t.Fatalf("tools = %+v", lt.Tools)
	}
	// tools/list and the card agree on the schema.
	card, _ := s.Card()
	got, _ := json.Marshal(lt.Tools[0].InputSchema)
	if !jsonEqual(t, got, card.Capabilities.Tools[0].InputSchema) {
		t.Fatalf("tools/list schema %s != card %s", got, card.Capabilities.Tools[0].InputSchema)
	}

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "items_add_item", Arguments: map[string]any{"item": "z", "times": 3}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if txt := res.Content[0].(*sdk.TextContent).Text; txt != `{"count":3}` || len(*items) != 3 {
		t.Fatalf("text %q items %v", txt, *items)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "nope"})
	if err != nil || !res.IsError || res.Content[0].(*sdk.TextContent).Text != "Unknown tool: nope" {
		t.Fatalf("unknown tool: %v %+v", err, res)
	}
	// Role from the header, session from the connection.
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("whoami: %v %+v", err, res)
	}
	var w whoOut
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &w)
	if w.Role != "agent-b" || w.Session != cs.ID() || w.Session == "" {
		t.Fatalf("header identity: %+v (session %q)", w, cs.ID())
	}
	// Role and session from _meta.
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "whoami", Arguments: map[string]any{},
		Meta: sdk.Meta{protocol.MetaRole: "fwd", protocol.MetaSession: "gw-1"}})
	if err != nil || res.IsError {
		t.Fatalf("whoami meta: %v %+v", err, res)
	}
	b, _ = json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &w)
	if w.Role != "fwd" || w.Session != "gw-1" {
		t.Fatalf("meta identity: %+v", w)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func TestHookRefusalGoSDK(t *testing.T) {
	s, ran, _ := whoServer(t)
	env := envsdktest.Start(t, s)
	cs := goSDKSession(t, env.MCPURL, map[string]string{"AgentEnv-Role": "intruder"})
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || !res.IsError || res.Content[0].(*sdk.TextContent).Text != "Tool 'whoami' is disabled for role 'intruder'" {
		t.Fatalf("refusal: %v %+v", err, res)
	}
	if ran.Load() != 0 {
		t.Fatal("refused tool ran")
	}
}

func TestWithCallerNesting(t *testing.T) {
	bg := context.Background()
	if tc := envsdk.ToolContextFrom(bg); tc.Transport != envsdk.TransportNone || tc.Caller != (envsdk.Caller{}) {
		t.Fatalf("outside a call: %+v", tc)
	}
	outer := envsdk.WithCaller(bg, "agent", "s1")
	inner := envsdk.WithCaller(outer, "default", "s2")
	if c := envsdk.CallerFrom(inner); c.Role != "" || c.RawRole != "default" || c.Session != "s2" {
		t.Fatalf("inner %+v", c)
	}
	if c := envsdk.CallerFrom(outer); c.Role != "agent" || c.Session != "s1" {
		t.Fatalf("outer after nesting %+v", c)
	}
}
