package protocol_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentenv/agentenv/protocol"
)

// -update rewrites the *.golden.json files from the current encoders.
// The flag is shared with any other test file of the package that wants it.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// golden decodes testdata/core/<name>.json with decode, re-encodes the
// value and compares it with <name>.golden.json. Goldens are indented
// for review; comparison is on the decoded JSON values, so key order does
// not matter but null versus missing does.
func golden(t *testing.T, name string, decode func([]byte) (any, error)) any {
	t.Helper()
	in, err := os.ReadFile(filepath.Join("testdata", "core", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := decode(in)
	if err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %s: %v", name, err)
	}
	path := filepath.Join("testdata", "core", name+".golden.json")
	if updating() {
		var buf bytes.Buffer
		_ = json.Indent(&buf, out, "", "  ")
		buf.WriteByte('\n')
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(out, &g)
	if d := cmp.Diff(w, g); d != "" {
		t.Fatalf("%s: re-encoded differs from golden (-want +got):\n%s", name, d)
	}
	// Round trip is stable: decoding the output and encoding again is a no-op.
	v2, err := decode(out)
	if err != nil {
		t.Fatalf("decode own output: %v", err)
	}
	out2, _ := json.Marshal(v2)
	if !bytes.Equal(out, out2) {
		t.Fatalf("%s: second round trip changed:\n%s\n%s", name, out, out2)
	}
	return v
}

func decodeCard(b []byte) (any, error) { return protocol.DecodeEnvCard(b) }

func TestGoldenCards(t *testing.T) {
	for _, name := range []string{"card_items", "card_minimal", "card_all_null", "card_capabilities_null", "card_gateway"} {
		t.Run(name, func(t *testing.T) { golden(t, name, decodeCard) })
	}
}

// The spec's example card is served byte-for-byte in shape: the golden
// equals the input.
func TestCardItemsIsIdentity(t *testing.T) {
	in, _ := os.ReadFile("testdata/core/card_items.json")
	c, err := protocol.DecodeEnvCard(in)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(c)
	var a, b any
	_ = json.Unmarshal(in, &a)
	_ = json.Unmarshal(out, &b)
	if d := cmp.Diff(a, b); d != "" {
		t.Fatalf("(-in +out):\n%s", d)
	}
}

func TestCardHelpers(t *testing.T) {
	in, _ := os.ReadFile("testdata/core/card_gateway.json")
	c, err := protocol.DecodeEnvCard(in)
	if err != nil {
		t.Fatal(err)
	}
	if c.MCPPath() != "/mcp" || c.DataPlaneURL() != "/agentenv" {
		t.Fatalf("paths %q %q", c.MCPPath(), c.DataPlaneURL())
	}
	if c.SupportsOperation(protocol.MethodDataAdd) {
		t.Fatal("operations [] supports nothing")
	}
	slack := c.FindChild("slack")
	if slack == nil || !slack.SupportsOperation(protocol.MethodDataAdd) || slack.MCPPath() != "/svc/mcp-slack/mcp" {
		t.Fatalf("child %+v", slack)
	}
	// FindExtension never searches children.
	if c.FindExtension(protocol.URIGetInterfaces) != nil || c.FindChild("none") != nil || c.FindTool("x") != nil {
		t.Fatal("found what is not there")
	}
	clock := c.FindExtension(protocol.URIClock)
	p, err := clock.MethodParams()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.MethodNames(), ","); got != "get_time,set_time,clear,state" {
		t.Fatalf("method order %s", got)
	}
	m := p.FindMethod("")
	if m == nil || m.Name != "get_time" || m.Method != "GET" || m.Endpoint != "/clock/time" {
		t.Fatalf("first method %+v", m)
	}
	if m := p.FindMethod("clear"); m == nil || m.Method != "POST" || m.Endpoint != "/clock" {
		t.Fatalf("clear %+v", m)
	}
	if p.FindMethod("nope") != nil {
		t.Fatal("unknown method found")
	}
	intake := c.FindExtension(protocol.URIIntake)
	if ip, err := intake.MethodParams(); err != nil || ip.Methods != nil {
		t.Fatalf("absent params: %+v %v", ip, err)
	}
	var empty protocol.EnvCard
	if empty.MCPPath() != "/mcp" || !empty.SupportsOperation(protocol.MethodDataGet) || empty.FindExtension("x") != nil {
		t.Fatal("zero card helpers")
	}
}

func TestCardValidate(t *testing.T) {
	for body, want := range map[string]string{
		`{}`:          "name: required",
		`{"name":""}`: "name: required",
		`[]`:          "env card",
		`{"name":"x","capabilities":{"extensions":[{"description":"d"}]}}`: "capabilities.extensions[0].uri: required",
		`{"name":5}`: "env card",
	} {
		if _, err := protocol.DecodeEnvCard([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

func TestGoldenExtensionParams(t *testing.T) {
	v := golden(t, "ext_echo_params", func(b []byte) (any, error) {
		var p protocol.ExtensionParams
		err := json.Unmarshal(b, &p)
		return p, err
	})
	p := v.(protocol.ExtensionParams)
	if m := p.FindMethod("ping"); m == nil || m.Method != "GET" || m.Endpoint != "/agentenv/ext/ping" {
		t.Fatalf("ping %+v", m)
	}
	// Methods keep document order on the wire, extras follow.
	out, _ := json.Marshal(p)
	if !strings.HasPrefix(string(out), `{"endpoint":"/agentenv/ext/echo","methods":{"echo":`) || !strings.Contains(string(out), `"ping":{"method":"get","endpoint":"/agentenv/ext/ping"}`) {
		t.Fatalf("order: %s", out)
	}
	var n protocol.ExtensionParams
	if err := json.Unmarshal([]byte(`{"methods":null,"endpoint":null}`), &n); err != nil || n.Methods != nil || n.Endpoint != "" {
		t.Fatalf("null params: %+v %v", n, err)
	}
	if err := json.Unmarshal([]byte(`{"methods":[1]}`), &n); err == nil {
		t.Fatal("methods as a list accepted")
	}
}

func TestGoldenParts(t *testing.T) {
	v := golden(t, "parts", func(b []byte) (any, error) {
		var ps []protocol.Part
		err := json.Unmarshal(b, &ps)
		return ps, err
	})
	ps := v.([]protocol.Part)
	if string(ps[2].File.Bytes) != `{"items":["a"]}` || ps[3].File.URI != "file:///data/seed.json" {
		t.Fatalf("files %+v %+v", ps[2].File, ps[3].File)
	}
	if !bytes.Contains(ps[1].Data, []byte("12345678901234567890")) {
		t.Fatal("data number not kept verbatim")
	}
}

func TestPartDecodeErrors(t *testing.T) {
	for body, want := range map[string]string{
		`[]`:                                   "part must be a JSON object",
		`{}`:                                   "kind: required",
		`{"kind":null}`:                        "kind: required",
		`{"kind":"image"}`:                     `unknown part kind "image"`,
		`{"kind":"text"}`:                      "text: required",
		`{"kind":"data"}`:                      "data: must be a JSON object",
		`{"kind":"data","data":"x"}`:           "data: must be a JSON object",
		`{"kind":"file"}`:                      "file: required",
		`{"kind":"file","file":{}}`:            "file: needs bytes or uri",
		`{"kind":"file","file":{"bytes":"*"}}`: "file.bytes",
		`{"kind":"text","text":"x","metadata":[]}`: "metadata: must be a JSON object",
	} {
		var p protocol.Part
		if err := json.Unmarshal([]byte(body), &p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	if _, err := json.Marshal(protocol.Part{Kind: "image"}); err == nil {
		t.Error("unknown kind encoded")
	}
}

func TestBase64Variants(t *testing.T) {
	for _, enc := range []string{"aGk/Pz4+", "aGk_Pz4-", "aGk/Pz4+\n", "aGk/\r\nPz4+"} {
		var p protocol.Part
		if err := json.Unmarshal([]byte(`{"kind":"file","file":{"bytes":`+jsonString(enc)+`}}`), &p); err != nil || string(p.File.Bytes) != "hi??>>" {
			t.Errorf("%q: %v %q", enc, err, p.File)
		}
	}
	var p protocol.Part
	if err := json.Unmarshal([]byte(`{"kind":"file","file":{"bytes":"aGk"}}`), &p); err != nil || string(p.File.Bytes) != "hi" {
		t.Errorf("unpadded: %v", err)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestGoldenResponses(t *testing.T) {
	golden(t, "responses", func(b []byte) (any, error) {
		var rs []protocol.Response
		err := json.Unmarshal(b, &rs)
		return rs, err
	})
}

func TestDecodeRequest(t *testing.T) {
	cases := []struct {
		body   string
		code   int64
		id     string
		method string
		params string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"data/reset"}`, 0, `1`, "data/reset", `{}`},
		{`  {"jsonrpc":"2.0","id":"a","method":"m","params":null}`, 0, `"a"`, "m", `{}`},
		{`{"jsonrpc":"2.0","method":"m","params":[1]}`, 0, `null`, "m", `[1]`},
		{`{"jsonrpc":"2.0","id":-0.5,"method":"m","params":{"x":1}}`, 0, `-0.5`, "m", `{"x":1}`},
		{`nope`, protocol.CodeParseError, `null`, "", ""},
		{``, protocol.CodeParseError, `null`, "", ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"m"}]`, protocol.CodeInvalidRequest, `null`, "", ""},
		{`"str"`, protocol.CodeInvalidRequest, `null`, "", ""},
		{`{"jsonrpc":"1.0","id":2,"method":"m"}`, protocol.CodeInvalidRequest, `2`, "", ""},
		{`{"jsonrpc":null,"id":2,"method":"m"}`, protocol.CodeInvalidRequest, `2`, "", ""},
		{`{"jsonrpc":"2.0","id":3}`, protocol.CodeInvalidRequest, `3`, "", ""},
		{`{"jsonrpc":"2.0","id":3,"method":null}`, protocol.CodeInvalidRequest, `3`, "", ""},
		{`{"jsonrpc":"2.0","id":3,"method":["m"]}`, protocol.CodeInvalidRequest, `3`, "", ""},
	}
	for _, c := range cases {
		req, e := protocol.DecodeRequest([]byte(c.body))
		var code int64
		if e != nil {
			code = e.Code
		}
		if code != c.code || string(req.ID) != c.id {
			t.Errorf("%s: code %d id %s, want %d %s", c.body, code, req.ID, c.code, c.id)
			continue
		}
		if e == nil && (req.Method != c.method || string(req.Params) != c.params) {
			t.Errorf("%s: method %q params %s", c.body, req.Method, req.Params)
		}
	}
}

func TestDecodeAddAndGetParams(t *testing.T) {
	for params, want := range map[string]string{
		`[]`:             "params: must be a JSON object",
		`{}`:             "parts: required",
		`{"parts":null}`: "parts: required",
		`{"parts":"x"}`:  "parts: must be a list",
		`{"parts":[]}`:   "parts: must contain at least one part",
		`{"parts":[{"kind":"data","data":{}},{"kind":"bad"}]}`: `parts[1].kind: unknown part kind "bad"`,
	} {
		if _, err := protocol.DecodeAddParams(json.RawMessage(params)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", params, err, want)
		}
	}
	p, err := protocol.DecodeAddParams(json.RawMessage(`{"parts":[{"kind":"text","text":"t"}]}`))
	if err != nil || len(p.Parts) != 1 || p.Parts[0].Text != "t" {
		t.Fatalf("%+v %v", p, err)
	}
	g, err := protocol.DecodeGetParams(json.RawMessage(`{"write_namespace":null}`))
	if err != nil || g.WriteNamespace != nil {
		t.Fatalf("%+v %v", g, err)
	}
	_, err = protocol.DecodeGetParams(json.RawMessage(`{"write_namespace":"s3cr3t-signature"}`))
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "write_namespace") {
		t.Fatalf("grant error %v", err)
	}
	if _, err := protocol.DecodeGetParams(json.RawMessage(`[]`)); err == nil {
		t.Fatal("list params accepted")
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		e    *protocol.Error
		wire string
		text string
	}{
		{protocol.NewParseError(), `{"code":-32700,"message":"parse error"}`, "parse error (-32700)"},
		{protocol.NewInvalidRequest(""), `{"code":-32600,"message":"invalid request"}`, "invalid request (-32600)"},
		{protocol.NewInvalidRequest("body exceeds 5 bytes"), `{"code":-32600,"message":"invalid request","data":{"detail":"body exceeds 5 bytes"}}`,
			`invalid request ({"detail":"body exceeds 5 bytes"})`},
		{protocol.NewMethodNotFound("data/x"), `{"code":-32601,"message":"method not found: data/x"}`, "method not found: data/x (-32601)"},
		{protocol.NewInvalidParams("parts: required"), `{"code":-32602,"message":"invalid_request","data":{"detail":"parts: required"}}`,
			`invalid_request ({"detail":"parts: required"})`},
		{protocol.NewHandlerError("boom", protocol.DataCodeAddFailed), `{"code":-32000,"message":"boom","data":{"code":"add_failed"}}`,
			`boom ({"code":"add_failed"})`},
	}
	for _, c := range cases {
		b, _ := json.Marshal(c.e)
		if string(b) != c.wire || c.e.Error() != c.text {
			t.Errorf("got %s / %q, want %s / %q", b, c.e.Error(), c.wire, c.text)
		}
	}
	wrapped := errors.Join(errors.New("ctx"), protocol.NewMethodNotFound("m"))
	if !errors.Is(wrapped, &protocol.Error{Code: protocol.CodeMethodNotFound}) || errors.Is(wrapped, &protocol.Error{Code: protocol.CodeParseError}) {
		t.Fatal("errors.Is by code")
	}
	b, _ := json.Marshal(protocol.NewExtensionError(protocol.ExtCodeInvalidParams, "body too large"))
	if string(b) != `{"ok":false,"error":{"code":"invalid_params","message":"body too large"}}` {
		t.Fatalf("extension error %s", b)
	}
}

func TestNormalizeRole(t *testing.T) {
	for raw, want := range map[string]string{"": "", "  ": "", "default": "", "agent": "agent", " agent": " agent", "Default": "Default"} {
		if got := protocol.NormalizeRole(raw); got != want {
			t.Errorf("NormalizeRole(%q) = %q, want %q", raw, got, want)
		}
	}
	if protocol.GatewayRole(" ") != "default" || protocol.GatewayRole("a") != "a" {
		t.Fatal("GatewayRole")
	}
}

func TestExtensionEncoding(t *testing.T) {
	f := false
	b, _ := json.Marshal(protocol.Extension{URI: "urn:x"})
	if string(b) != `{"uri":"urn:x","description":null,"params":null,"required":null}` {
		t.Fatalf("empty extension %s", b)
	}
	b, _ = json.Marshal(protocol.Extension{URI: "urn:x", Description: "d", Params: json.RawMessage(`{}`), Required: &f})
	if string(b) != `{"uri":"urn:x","description":"d","params":{},"required":false}` {
		t.Fatalf("extension %s", b)
	}
}
