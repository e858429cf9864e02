package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestStepErrorTable pins the /step error table (docs/protocol.md), in order.
func TestStepErrorTable(t *testing.T) {
	release := make(chan struct{})
	c := startChild(t, "items", nil)
	c.srv.AddTools(server.ServerTool{Tool: mcp.NewToolWithRawSchema("items_slow", "Slow.", json.RawMessage(`{"type":"object"}`)),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return mcp.NewToolResultText("late"), nil
		}})
	t.Cleanup(func() { close(release) })
	opts := testOptions()
	opts.CallTimeout = 300 * time.Millisecond
	tg := startGateway(t, &Config{Servers: serversOf(c), MaxBodyBytes: 256}, opts)
	tg.rule(t, "disable", `{"role":"default","tools":["items_echo","ghost"]}`)

	cases := []struct {
		body   string
		status int
		msg    string
	}{
		{`{"action":`, 400, "Invalid JSON body"},
		{``, 400, "Invalid JSON body"},
		{`[1]`, 400, "body must be a JSON object"},
		{`null`, 400, "body must be a JSON object"},
		{`{}`, 400, "Unknown action: None. Expected 'list_tools' or 'call_tool'."},
		{`{"action":"run"}`, 400, "Unknown action: run. Expected 'list_tools' or 'call_tool'."},
		{`{"action":"call_tool"}`, 400, "Missing or invalid 'tool_name' field"},
		{`{"action":"call_tool","tool_name":""}`, 400, "Missing or invalid 'tool_name' field"},
		{`{"action":"call_tool","tool_name":7}`, 400, "Missing or invalid 'tool_name' field"},
		{`{"action":"call_tool","tool_name":"items_echo","arguments":null}`, 400, "'arguments' must be a JSON object"},
		{`{"action":"call_tool","tool_name":"items_echo","arguments":[1]}`, 400, "'arguments' must be a JSON object"},
		{`{"action":"call_tool","tool_name":"items_echo"}`, 403, "Tool 'items_echo' is disabled for role 'default'"},
		{`{"action":"call_tool","tool_name":"ghost"}`, 403, "Tool 'ghost' is disabled for role 'default'"},
		{`{"action":"call_tool","tool_name":"nope"}`, 404, "Unknown tool: nope"},
		{`{"action":"call_tool","tool_name":"items_slow"}`, 504, "Tool 'items_slow' timed out after 0.3s"},
		{`{"action":"list_tools","pad":"` + strings.Repeat("x", 300) + `"}`, 413, "request body too large"},
	}
	for _, tc := range cases {
		st, body := tg.post(t, "/step", nil, tc.body)
		if st != tc.status || mustJSONMap(t, body)["error"] != tc.msg {
			t.Errorf("/step %q = %d %s; want %d %q", tc.body, st, body, tc.status, tc.msg)
		}
	}
}

func TestStepDiscoveryPending(t *testing.T) {
	// A server that is reachable (readiness passes) but is not MCP: discovery fails.
	notMCP := http.NewServeMux()
	notMCP.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(400) })
	hs := newLoopbackServer(t, notMCP)
	tg := startGateway(t, &Config{Servers: []Server{{Name: "broken", URL: hs + "/mcp"}}}, nil, true)
	waitFor(t, "discovery attempted", func() bool {
		_, b := tg.get(t, "/readyz", nil)
		return strings.Contains(string(b), "error: ")
	})
	st, body := tg.post(t, "/step", nil, `not json at all`)
	if st != 503 || mustJSONMap(t, body)["error"] != discoveryPendingMessage {
		t.Fatalf("/step before discovery = %d %s", st, body)
	}
	if st, _ := tg.get(t, "/readyz", nil); st != 503 {
		t.Fatalf("/readyz = %d", st)
	}
}

func TestStepCallResultShape(t *testing.T) {
	c := startChild(t, "mail", nil)
	c.srv.AddTools(richTool(c))
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	st, body := tg.post(t, "/step", nil, `{"action":"call_tool","tool_name":"mail_list_emails","arguments":{}}`)
	if st != 200 {
		t.Fatalf("%d %s", st, body)
	}
	m := mustJSONMap(t, body)
	if m["isError"] != false || m["changelog_id"] != nil || m["structuredContent"] == nil {
		t.Fatalf("result %s", body)
	}
	if _, ok := m["changelog_id"]; !ok {
		t.Fatalf("changelog_id missing: %s", body)
	}
	meta, _ := m["meta"].(map[string]any)
	meta2, _ := m["_meta"].(map[string]any)
	if meta["trace"] != "t1" || meta2["trace"] != "t1" {
		t.Fatalf("_meta not under meta and _meta: %s", body)
	}
	// A child isError result is still 200.
	c.srv.AddTools(server.ServerTool{Tool: mcp.NewToolWithRawSchema("mail_bad", "", json.RawMessage(`{"type":"object"}`)),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("nope"), nil
		}})
	waitFor(t, "re-discovery of mail_bad", func() bool { _, ok := tg.reg.lookup("mail_bad"); return ok })
	st, body = tg.post(t, "/step", nil, `{"action":"call_tool","tool_name":"mail_bad"}`)
	if st != 200 || mustJSONMap(t, body)["isError"] != true {
		t.Fatalf("isError via /step = %d %s", st, body)
	}

	// list_tools shape: {name, description, parameters} (+annotations), default parameters.
	st, body = tg.post(t, "/step", nil, `{"action":"list_tools"}`)
	var lt struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	json.Unmarshal(body, &lt)
	found := false
	for _, tool := range lt.Tools {
		if string(tool["name"]) == `"mail_list_emails"` {
			found = true
			if string(tool["description"]) != `"List emails."` || !strings.Contains(string(tool["parameters"]), `"folder"`) ||
				!strings.Contains(string(tool["annotations"]), `"readOnlyHint":true`) {
				t.Fatalf("list_tools entry %v", tool)
			}
		}
	}
	if !found || st != 200 {
		t.Fatalf("list_tools = %d %s", st, body)
	}
}

func TestStateShape(t *testing.T) {
	a := startChild(t, "a", nil)
	b := startChild(t, "b", nil)
	b.srv.AddTools(b.echoTool("a_echo")) // collides with a's tool
	web := startChild(t, "web", nil)
	tg := startGateway(t, &Config{Servers: serversOf(a, b), Websites: []Upstream{{"w", web.Base}}}, nil)
	tg.rule(t, "disable", `{"role":"default","tools":["a_echo"]}`)
	st, body := tg.get(t, "/state", nil)
	if st != 200 {
		t.Fatal(st)
	}
	want := `{"mcp_servers":[{"name":"a","tools":[{"name":"a_echo","description":"Echo the arguments.","parameters":{"type":"object","properties":{"msg":{"type":"string"}}}}]},` +
		`{"name":"b","tools":[{"name":"b_echo","description":"Echo the arguments.","parameters":{"type":"object","properties":{"msg":{"type":"string"}}}}],"errors":["Duplicate tool name 'a_echo': already registered from 'a', cannot register from 'b'"]},` +
		`{"name":"gateway","tools":[{"name":"list_website_urls","description":"List available website URLs that can be browsed.","parameters":{"type":"object","properties":{}}}]}],` +
		`"changelog_id":null,"roles":{"default":{"disabled":["a_echo"],"allowed":[]}}}` + "\n"
	if string(body) != want {
		t.Fatalf("/state =\n%s\nwant\n%s", body, want)
	}
	_, ready := tg.get(t, "/readyz", nil)
	if !strings.Contains(string(ready), "Duplicate tool name 'a_echo'") {
		t.Fatalf("/readyz does not report the collision: %s", ready)
	}
}
