package gateway

import (
	"bytes"
	"errors"
	"net/http"
	"testing"
)

func TestRPCMessageDecode(t *testing.T) {
	for _, tc := range []struct {
		in, method, id, params string
		ok                     bool
	}{
		{in: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a"}}`, method: "tools/call", id: "7", params: `{"name":"a"}`, ok: true},
		{in: `{"id":"x","method":"tools/list"}`, method: "tools/list", id: `"x"`, ok: true},
		{in: `{"method":"a","method":"tools/\u0063all","id":1}`, method: "tools/call", id: "1", ok: true}, // last wins, escapes read
		{in: `{"method":null,"id":1}`, id: "1", ok: true},
		{in: `{"Method":"tools/call","id":1}`, id: "1", ok: true}, // JSON-RPC names are case-sensitive
		{in: `{"method":3,"id":1}`},
		{in: `{"method":"tools/call","id":1} x`},
		{in: `{"method":"tools/call","id":1,}`},
		{in: `[{"method":"tools/call","id":1}]`},
	} {
		var m rpcMessage
		err := m.decode([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.in, err)
			continue
		}
		if tc.ok && (m.Method != tc.method || string(m.ID) != tc.id || string(m.Params) != tc.params) {
			t.Errorf("%s: got method %q id %s params %s", tc.in, m.Method, m.ID, m.Params)
		}
	}
}

func TestDecodeCallParams(t *testing.T) {
	for _, tc := range []struct {
		in, name, args, meta string
		ok                   bool
	}{
		{in: `{"name":"t","arguments":{"a":[1,2]},"_meta":{"progressToken":1}}`, name: "t", args: `{"a":[1,2]}`, meta: `{"progressToken":1}`, ok: true},
		{in: `{"name":"t","arguments":null}`, name: "t", ok: true},
		{in: `{"name":"t","arguments":"not an object"}`, name: "t", args: `"not an object"`, ok: true}, // the child judges
		{in: `{"name":""}`, ok: true},
		{in: `{"arguments":{}}`},
		{in: `{"name":null}`},
		{in: `{"name":1}`},
		{in: `["t"]`},
		{in: ``},
	} {
		p, ok := decodeCallParams([]byte(tc.in))
		if ok != tc.ok || (ok && (p.Name != tc.name || string(p.Arguments) != tc.args || string(p.Meta) != tc.meta)) {
			t.Errorf("%s: got %+v ok %v", tc.in, p, ok)
		}
	}
}

func TestDecodeResponse(t *testing.T) {
	raw := []byte(` {"jsonrpc":"2.0","id":5,"result":{"content":[]}} `)
	res, err, ok := decodeResponse(raw, "5")
	if !ok || err != nil || string(res) != `{"content":[]}` {
		t.Fatalf("got %s %v %v", res, err, ok)
	}
	raw[len(raw)-4] = ']' // the result must not alias the (reused) read buffer
	if string(res) != `{"content":[]}` {
		t.Fatalf("result aliases its input: %s", res)
	}
	if _, _, ok := decodeResponse([]byte(`{"id":6,"result":{}}`), "5"); ok {
		t.Error("a response to another request was taken")
	}
	if _, _, ok := decodeResponse([]byte(`{"id":5,"result":{}`), "5"); ok {
		t.Error("a truncated response was taken")
	}
	_, err, ok = decodeResponse([]byte(`{"id":5,"error":{"code":-32602,"message":"bad"}}`), "5")
	var re *rpcError
	if !ok || !errors.As(err, &re) || re.Code != -32602 || re.Message != "bad" {
		t.Fatalf("error answer: %v %v", err, ok)
	}
	if res, err, ok := decodeResponse([]byte(`{"id":5,"error":null,"result":{"x":1}}`), "5"); !ok || err != nil || string(res) != `{"x":1}` {
		t.Fatalf("null error: %s %v %v", res, err, ok)
	}
	if _, err, ok := decodeResponse([]byte(`{"id":5}`), "5"); !ok || err == nil {
		t.Fatalf("no result: %v %v", err, ok)
	}
	if _, _, ok := decodeResponse([]byte(`{"id":5,"error":{"code":"x"}}`), "5"); ok {
		t.Error("a malformed error object was taken")
	}
}

// A body with whitespace JSON does not allow (form feed) is not a JSON-RPC
// message the gateway answers itself; mcp-go rejects it as a parse error.
func TestMCPBodyWithNonJSONWhitespace(t *testing.T) {
	child := startChild(t, "items", nil)
	tg := startGateway(t, &Config{Servers: serversOf(child)}, nil)
	hdr := map[string]string{"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
	st, _, h := tg.do(t, http.MethodPost, "/mcp", hdr, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if st != 200 || h.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d", st)
	}
	hdr["Mcp-Session-Id"] = h.Get("Mcp-Session-Id")
	valid := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"items_echo","arguments":{}}}`
	if st, body := tg.post(t, "/mcp", hdr, valid); st != 200 || !bytes.Contains(body, []byte(`"result"`)) {
		t.Fatalf("the valid call: %d %s", st, body)
	}
	st, body := tg.post(t, "/mcp", hdr, "\f"+valid)
	if st == 200 && bytes.Contains(body, []byte(`"result"`)) {
		t.Fatalf("an invalid JSON body was served as a tool call: %d %s", st, body)
	}
	if _, _, ok := decodeResponse([]byte("\f"+`{"id":5,"result":{}}`), "5"); ok {
		t.Error("a child answer that is not valid JSON was taken")
	}
}
