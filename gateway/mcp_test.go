package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentenv/agentenv/protocol"
)

// richTool has every descriptor field the gateway must pass through.
func richTool(c *testChild) server.ServerTool {
	ro := true
	t := mcp.NewToolWithRawSchema("mail_list_emails", "List emails.",
		json.RawMessage(`{"type":"object","title":"ListArgs","properties":{"folder":{"type":"string","title":"Folder","default":"inbox"}},"additionalProperties":false}`))
	t.Title = "List emails"
	t.RawOutputSchema = json.RawMessage(`{"type":"object","properties":{"emails":{"type":"array"}}}`)
	t.Annotations = mcp.ToolAnnotation{ReadOnlyHint: &ro, Title: "List"}
	t.Icons = []mcp.Icon{{Src: "https://x.example/i.png", MIMEType: "image/png"}}
	t.Meta = &mcp.Meta{AdditionalFields: map[string]any{"vendor.example/tag": "a<b&c"}}
	return server.ServerTool{Tool: t, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c.record(req)
		return &mcp.CallToolResult{
			Content:           []mcp.Content{mcp.NewTextContent(`{"emails":[]}`)},
			StructuredContent: map[string]any{"emails": []any{}},
			Result:            mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{"trace": "t1"}}},
		}, nil
	}}
}

func rawTools(t *testing.T, res json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var r struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for _, x := range r.Tools {
		var n struct{ Name string }
		json.Unmarshal(x, &n)
		out[n.Name] = x
	}
	return out
}

func directClient(t *testing.T, url string) *mcpClient {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	mc := &mcpClient{c: client.NewClient(tr)}
	if err := mc.c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mc.c.Close() })
	if _, err := mc.c.Initialize(context.Background(), mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20251125}}); err != nil {
		t.Fatal(err)
	}
	return mc
}

func TestMergeOrderAndDescriptorPassthrough(t *testing.T) {
	mail := &testChild{}
	mail = startChild(t, "mail", &childOpts{tools: nil})
	mail.srv.AddTools(richTool(mail))
	slack := startChild(t, "slack", nil)
	web := startChild(t, "web", nil)
	tg := startGateway(t, &Config{Servers: serversOf(mail, slack),
		Websites: []Upstream{{Key: "site", URL: web.Base}}}, nil)

	agent := tg.mcpClient(t, "")
	names := agent.toolNames(t)
	want := []string{"list_website_urls", "mail_echo", "mail_list_emails", "slack_echo"}
	// mcp-go lists a server's tools sorted by name; the gateway keeps each
	// server's order and puts servers in configuration order.
	if !slices.Equal(names, want) {
		t.Fatalf("tools/list = %v, want %v", names, want)
	}

	direct := rawTools(t, directClient(t, mail.URL).raw(t, "tools/list", map[string]any{}))
	via := rawTools(t, agent.raw(t, "tools/list", map[string]any{}))
	if !bytes.Equal(direct["mail_list_emails"], via["mail_list_emails"]) {
		t.Fatalf("descriptor changed:\ndirect  %s\ngateway %s", direct["mail_list_emails"], via["mail_list_emails"])
	}
	for _, key := range []string{`"title":"List emails"`, `"outputSchema"`, `"icons"`, `"_meta"`, `"readOnlyHint":true`, `"title":"ListArgs"`} {
		if !bytes.Contains(via["mail_list_emails"], []byte(key)) {
			t.Errorf("descriptor lacks %s: %s", key, via["mail_list_emails"])
		}
	}

	// The call result passes through unchanged (structuredContent, _meta).
	res := agent.raw(t, "tools/call", map[string]any{"name": "mail_list_emails", "arguments": map[string]any{}})
	directRes := directClient(t, mail.URL).raw(t, "tools/call", map[string]any{"name": "mail_list_emails", "arguments": map[string]any{}})
	if !bytes.Equal(res, directRes) {
		t.Fatalf("result changed:\ndirect  %s\ngateway %s", directRes, res)
	}

	// list_website_urls returns the website URL values.
	out := agent.call(t, "list_website_urls", nil)
	if out.IsError || out.text() != fmt.Sprintf("[%q]", web.Base) {
		t.Fatalf("list_website_urls = %+v", out)
	}
}

func TestArgumentsVerbatimAndMetaStamping(t *testing.T) {
	c := startChild(t, "items", nil)
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)

	a := tg.mcpClient(t, "agent-a")
	b := tg.mcpClient(t, "")
	// Big integers and key order survive: the raw bytes are forwarded.
	args := json.RawMessage(`{"n":12345678901234567890,"z":1,"a":{"b":[1.50,null]}}`)
	out := a.call(t, "items_echo", args)
	if out.IsError || out.text() != string(args) {
		t.Fatalf("arguments not verbatim: %q", out.text())
	}
	metaA := c.lastMeta(t)
	keyA, _ := metaA[protocol.MetaSession].(string)
	if metaA[protocol.MetaRole] != "agent-a" || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(keyA) {
		t.Fatalf("_meta from /mcp = %v", metaA)
	}

	// A forged _meta is never copied.
	forged := b.raw(t, "tools/call", map[string]any{"name": "items_echo", "arguments": map[string]any{},
		"_meta": map[string]any{protocol.MetaRole: "admin", protocol.MetaSession: "forged", "progressToken": 7}})
	_ = forged
	metaB := c.lastMeta(t)
	keyB, _ := metaB[protocol.MetaSession].(string)
	if metaB[protocol.MetaRole] != "default" || keyB == "forged" || keyB == keyA || len(keyB) != 32 || len(metaB) != 2 {
		t.Fatalf("_meta for a forging default client = %v (session a %s)", metaB, keyA)
	}

	// /step stamps only the role.
	st, body := tg.post(t, "/step", role("cli"), `{"action":"call_tool","tool_name":"items_echo","arguments":{"x":1}}`)
	if st != 200 {
		t.Fatalf("/step = %d %s", st, body)
	}
	metaS := c.lastMeta(t)
	if len(metaS) != 1 || metaS[protocol.MetaRole] != "cli" {
		t.Fatalf("_meta from /step = %v", metaS)
	}

	// Internal calls carry only "as", or nothing.
	if _, err := tg.CallTool(context.Background(), "items_echo", json.RawMessage(`{}`), "system"); err != nil {
		t.Fatal(err)
	}
	if m := c.lastMeta(t); len(m) != 1 || m[protocol.MetaRole] != "system" {
		t.Fatalf("_meta of an internal call with as = %v", m)
	}
	if _, err := tg.CallTool(context.Background(), "items_echo", nil, ""); err != nil {
		t.Fatal(err)
	}
	if m := c.lastMeta(t); len(m) != 0 {
		t.Fatalf("_meta of an internal call without as = %v", m)
	}
}

func TestSessionsShareOneChildGeneration(t *testing.T) {
	c := startChild(t, "items", nil)
	var inits sync.Map
	c.inter.Store(func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if bytes.Contains(body, []byte(`"initialize"`)) {
			n, _ := inits.LoadOrStore("n", new(int))
			*(n.(*int))++
		}
		return false
	})
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	a := tg.mcpClient(t, "a")
	b := tg.mcpClient(t, "b")
	if out := a.call(t, "items_echo", map[string]any{}); out.IsError {
		t.Fatal(out.text())
	}
	// One agent leaving (DELETE of its session) never breaks another.
	if err := a.c.Close(); err != nil {
		t.Fatal(err)
	}
	if out := b.call(t, "items_echo", map[string]any{"after": "a left"}); out.IsError {
		t.Fatalf("second agent broken after the first left: %s", out.text())
	}
	n, _ := inits.Load("n")
	if got := *(n.(*int)); got != 1 {
		t.Fatalf("child saw %d initialize requests; want one shared generation", got)
	}
}

func TestUnknownAndDisabledToolsAreIsError(t *testing.T) {
	c := startChild(t, "items", nil)
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	a := tg.mcpClient(t, "")
	out := a.call(t, "nope", map[string]any{})
	if !out.IsError || out.text() != "Unknown tool: nope" {
		t.Fatalf("unknown tool = %+v", out)
	}
	st, body := tg.post(t, "/tools/disable", nil, `{"role":"default","tools":["items_echo","ghost"]}`)
	if st != 200 {
		t.Fatalf("disable = %d %s", st, body)
	}
	out = a.call(t, "items_echo", map[string]any{})
	if !out.IsError || out.text() != "Tool 'items_echo' is disabled for role 'default'" {
		t.Fatalf("disabled tool = %+v", out)
	}
	// Disabled is checked before existence.
	out = a.call(t, "ghost", map[string]any{})
	if out.text() != "Tool 'ghost' is disabled for role 'default'" {
		t.Fatalf("disabled unknown tool = %+v", out)
	}
	if slices.Contains(a.toolNames(t), "items_echo") {
		t.Fatal("disabled tool still listed")
	}
	if c.calls.Load() != 0 {
		t.Fatal("a refused call reached the child")
	}
}

func TestChildErrorsBecomeToolErrors(t *testing.T) {
	c := startChild(t, "items", &childOpts{tools: []server.ServerTool{{
		Tool: mcp.NewToolWithRawSchema("items_fail", "Fails.", json.RawMessage(`{"type":"object"}`)),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("boom from child"), nil
		}}, {
		Tool: mcp.NewToolWithRawSchema("items_rpcfail", "JSON-RPC error.", json.RawMessage(`{"type":"object"}`)),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("handler exploded")
		}},
	}})
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	a := tg.mcpClient(t, "")
	if out := a.call(t, "items_fail", map[string]any{}); !out.IsError || out.text() != "boom from child" {
		t.Fatalf("child isError = %+v", out)
	}
	out := a.call(t, "items_rpcfail", map[string]any{})
	if !out.IsError || !strings.HasPrefix(out.text(), "Error executing tool items_rpcfail: ") {
		t.Fatalf("child failure = %+v", out)
	}
	// A dead child: the error reaches the caller as a tool error and the
	// gateway keeps serving.
	c.hs.CloseClientConnections()
	c.hs.Close()
	out = a.call(t, "items_fail", map[string]any{})
	if !out.IsError || !strings.HasPrefix(out.text(), "Error executing tool items_fail: ") {
		t.Fatalf("dead child = %+v", out)
	}
	if st, _ := tg.get(t, "/healthz", nil); st != 200 {
		t.Fatal("gateway down after a child died")
	}
	st, body := tg.post(t, "/step", nil, `{"action":"call_tool","tool_name":"items_fail"}`)
	if st != 500 || !strings.HasPrefix(mustJSONMap(t, body)["error"].(string), "Tool execution failed (") {
		t.Fatalf("/step to a dead child = %d %s", st, body)
	}
}

func TestPaginationFollowsCursor(t *testing.T) {
	c := &testChild{name: "many"}
	var tools []server.ServerTool
	for i := 0; i < 7; i++ {
		tools = append(tools, server.ServerTool{Tool: mcp.NewToolWithRawSchema(fmt.Sprintf("many_t%d", i), "", json.RawMessage(`{"type":"object"}`)),
			Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("ok"), nil
			}})
	}
	c = startChild(t, "many", &childOpts{tools: tools, pageSize: 2})
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	if n := len(tg.mcpClient(t, "").toolNames(t)); n != 7 {
		t.Fatalf("listed %d tools over pages of 2; want 7", n)
	}
}

// TestMountedMCPRouteTakesPrecedence: /mcp skips the mux on the hot path,
// but a mounted route that the mux would pick for it still gets it.
func TestMountedMCPRouteTakesPrecedence(t *testing.T) {
	tg := startGateway(t, &Config{}, nil)
	initReq := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	hdr := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	if st, body := tg.post(t, "/mcp", hdr, initReq); st != http.StatusOK || !strings.Contains(string(body), `"protocolVersion"`) {
		t.Fatalf("initialize before the mount: %d %s", st, body)
	}
	tg.Mount("POST /mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	if st, body := tg.post(t, "/mcp", hdr, initReq); st != http.StatusTeapot {
		t.Fatalf("after mounting POST /mcp: %d %s, want the mounted handler's 418", st, body)
	}
}
