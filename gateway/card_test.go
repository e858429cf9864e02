package gateway

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentenv/agentenv/protocol"
)

func childCard(exts string) []byte {
	return []byte(`{"name":"slack","protocolVersion":"1.0","url":"/agentenv/","preferredTransport":"JSONRPC",
 "additionalInterfaces":[{"url":"/mcp","transport":"mcp"}],
 "capabilities":{"extensions":` + exts + `,"tools":[{"name":"slack_post","description":"Post.","inputSchema":{"type":"object"}}],"operations":["data/reset"]},
 "children_environments":[{"name":"grandchild"}]}`)
}

func methodOf(t *testing.T, card *protocol.EnvCard, uri, name string) *protocol.ExtensionMethod {
	t.Helper()
	ext := card.FindExtension(uri)
	if ext == nil {
		t.Fatalf("no extension %s", uri)
	}
	p, err := ext.MethodParams()
	if err != nil {
		t.Fatal(err)
	}
	return p.FindMethod(name)
}

// TestChildRewriteTable pins the reference's child-card rewrite examples.
func TestChildRewriteTable(t *testing.T) {
	in, err := protocol.DecodeEnvCard(childCard(`[
	 {"uri":"urn:agentenv:clock/v1","description":null,"required":false,"params":{"endpoint":"/agentenv/ext/sync_time","methods":{"sync_time":{"method":"POST"}}}},
	 {"uri":"urn:agentenv:set-errors/v1","description":null,"required":false,"params":{"methods":{"set":{"method":"POST","endpoint":"/ext/clock/sync-time"}}}},
	 {"uri":"urn:agentenv:disable-tool/v1","description":null,"required":false,"params":{"endpoint":"/tools/disable","methods":{"disable":{"method":"POST"},"other":{"method":"POST"}}}},
	 {"uri":"urn:agentenv:enable-tool/v1","description":null,"required":false,"params":{"endpoint":"/tools/enable","methods":{"enable":{"method":"GET"}}}},
	 {"uri":"urn:agentenv:state/v1","description":null,"required":false,"params":{"endpoint":"/state","methods":{"get":{"method":"GET"}}}},
	 {"uri":"urn:agentenv:step/v1","description":null,"required":false,"params":{"endpoint":"/step","methods":{"step":{"method":"GET"}}}},
	 {"uri":"urn:example:abs/v1","description":null,"required":false,"params":{"endpoint":"https://x.example/api","methods":{"go":{}}}}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(in)
	out := rewriteChild("mcp-slack", *in)
	after, _ := json.Marshal(in)
	if string(before) != string(after) {
		t.Fatal("rewrite mutated its input")
	}
	if out.URL != "/svc/mcp-slack/agentenv" || len(out.AdditionalInterfaces) != 0 || out.ChildrenEnvironments != nil {
		t.Fatalf("url/interfaces/children: %q %v %v", out.URL, out.AdditionalInterfaces, out.ChildrenEnvironments)
	}
	if len(out.Capabilities.Tools) != 1 {
		t.Fatal("capabilities.tools must be untouched")
	}
	checks := []struct{ uri, method, endpoint string }{
		{protocol.URIClock, "sync_time", "/svc/mcp-slack/agentenv/ext/sync_time"},
		{protocol.URISetErrors, "set", "/svc/mcp-slack/ext/clock/sync-time"},
		{protocol.URIDisableTool, "disable", "/tools/disable"},             // gateway-owned
		{protocol.URIDisableTool, "other", "/svc/mcp-slack/tools/disable"}, // child's
		{protocol.URIEnableTool, "enable", "/svc/mcp-slack/tools/enable"},  // GET: child's
		{protocol.URIState, "get", "/state"},                               // identical to the gateway's
		{protocol.URIStep, "step", "/svc/mcp-slack/step"},                  // other verb
		{"urn:example:abs/v1", "go", "https://x.example/api"},              // absolute
	}
	for _, c := range checks {
		m := methodOf(t, &out, c.uri, c.method)
		if m == nil || m.Endpoint != c.endpoint {
			t.Errorf("%s %s: endpoint %+v; want %s", c.uri, c.method, m, c.endpoint)
		}
	}
	// Rule 4: the gateway-owned method relies on the extension endpoint,
	// which stays; the child-served method got its own prefixed endpoint.
	p, _ := out.FindExtension(protocol.URIDisableTool).MethodParams()
	if p.Endpoint != "/tools/disable" || p.Methods[1].Endpoint != "/svc/mcp-slack/tools/disable" || p.Methods[0].Endpoint != "" {
		t.Fatalf("rule 4: %+v", p)
	}
}

func TestComposedCard(t *testing.T) {
	slack := startChild(t, "slack", &childOpts{card: childCard(`[{"uri":"urn:agentenv:clock/v1","description":null,"required":false,"params":{"endpoint":"/agentenv/ext/sync_time","methods":{"sync_time":{"method":"POST"}}}}]`)})
	legacy := startChild(t, "legacy", nil) // 404 card: omitted
	broken := startChild(t, "broken", &childOpts{card: []byte(`{not json`)})
	var hits atomic.Int64
	counted := http.NewServeMux()
	counted.HandleFunc("GET "+protocol.EnvCardPath, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"name":"web"}`))
	})
	webURL := newLoopbackServer(t, counted)
	tg := startGateway(t, &Config{Name: "multi", Servers: serversOf(slack), RESTProxies: []Upstream{
		{"mcp-slack", slack.Base}, {"mcp-legacy", legacy.Base}, {"mcp-broken", broken.Base}, {"web", webURL}}}, nil)

	st, body := tg.get(t, protocol.EnvCardPath, nil)
	if st != 200 {
		t.Fatal(st)
	}
	card, err := protocol.DecodeEnvCard(body)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, e := range card.Capabilities.Extensions {
		uris = append(uris, e.URI)
		if e.Required == nil || *e.Required {
			t.Errorf("%s: required must be false", e.URI)
		}
	}
	want := []string{protocol.URIDisableTool, protocol.URIEnableTool, protocol.URITriggers, protocol.URIClock,
		protocol.URITrajectory, protocol.URIStep, protocol.URIState}
	if !slices.Equal(uris, want) {
		t.Fatalf("extensions %v", uris)
	}
	m := mustJSONMap(t, body)
	caps := m["capabilities"].(map[string]any)
	if v, ok := caps["tools"]; !ok || v != nil {
		t.Fatal("capabilities.tools must be null")
	}
	if card.Name != "multi" || card.URL != "/agentenv" || card.MCPPath() != "/mcp" {
		t.Fatalf("card head %+v", card)
	}
	var names []string
	for _, c := range card.ChildrenEnvironments {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"slack", "web"}) {
		t.Fatalf("children %v (legacy and malformed must be omitted)", names)
	}
	if ep := methodOf(t, &card.ChildrenEnvironments[0], protocol.URIClock, "sync_time").Endpoint; ep != "/svc/mcp-slack/agentenv/ext/sync_time" {
		t.Fatalf("child endpoint %s", ep)
	}
	step := methodOf(t, card, protocol.URIStep, "step")
	if !strings.Contains(string(step.Request), `"enum":["list_tools","call_tool"]`) {
		t.Fatalf("step schema %s", step.Request)
	}

	// Cached: a second read within the TTL does not refetch the children,
	// and a client can revalidate with the ETag.
	n := hits.Load()
	_, _, hdr := tg.do(t, "GET", protocol.EnvCardPath, nil, "")
	if hits.Load() != n {
		t.Fatal("card not cached")
	}
	if st, b, _ := tg.do(t, "GET", protocol.EnvCardPath, map[string]string{"If-None-Match": hdr.Get("ETag")}, ""); st != http.StatusNotModified || len(b) != 0 {
		t.Fatalf("revalidation = %d %q", st, b)
	}

	// Every advertised (endpoint, verb) is a served route.
	for _, e := range card.Capabilities.Extensions {
		p, _ := e.MethodParams()
		for _, meth := range p.MethodNames() {
			fm := p.FindMethod(meth)
			body := ""
			if fm.Method != http.MethodGet {
				body = `{}`
			}
			st, b, _ := tg.do(t, fm.Method, fm.Endpoint, nil, body)
			// A route may answer its own 404 (GET /clock/time unarmed);
			// the mux's own 404 is plain text.
			if (st == http.StatusNotFound && !json.Valid(b)) || st == http.StatusMethodNotAllowed {
				t.Errorf("%s %s advertised but answers %d", fm.Method, fm.Endpoint, st)
			}
		}
	}
}

func TestSingleServerCardHasNoChildren(t *testing.T) {
	tg := startGateway(t, &Config{}, nil)
	_, body := tg.get(t, protocol.EnvCardPath, nil)
	if !strings.Contains(string(body), `"children_environments":[]`) {
		t.Fatalf("card %s", body)
	}
}
