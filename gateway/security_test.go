package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentenv/agentenv/protocol"
)

// hdr is one request header line, sent exactly as written (name spelling
// and order kept), which http.Header cannot express.
type hdr struct{ k, v string }

// rawHTTP sends one HTTP/1.1 request with a verbatim request-target and
// header lines over a fresh loopback connection.
func rawHTTP(t testing.TB, base, method, target string, hs []hdr, body string) (int, http.Header, []byte) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A guard, not an assertion: a stream that never answers fails the
	// test instead of hanging it.
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	var b strings.Builder
	b.WriteString(method + " " + target + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: close\r\n")
	for _, h := range hs {
		b.WriteString(h.k + ": " + h.v + "\r\n")
	}
	if body != "" {
		b.WriteString("Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n")
		b.WriteString("Content-Length: " + itoa(len(body)) + "\r\n")
	}
	b.WriteString("\r\n" + body)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && method == http.MethodGet {
		return resp.StatusCode, resp.Header, nil // a listening stream does not end
	}
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, out
}

const initBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// mcpInit opens an MCP session on /mcp with the given headers and returns
// its id.
func mcpInit(t testing.TB, base string, hs ...hdr) string {
	t.Helper()
	st, h, b := rawHTTP(t, base, "POST", "/mcp", hs, initBody)
	sid := h.Get(protocol.HeaderMCPSessionID)
	if st != 200 || sid == "" {
		t.Fatalf("initialize = %d %s", st, b)
	}
	rawHTTP(t, base, "POST", "/mcp", append([]hdr{{protocol.HeaderMCPSessionID, sid}}, hs...), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

func callBody(tool string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"msg":"x"}}}`
}

// hiddenToolEnv is a child with a harmless and a hidden tool, the hidden
// one disabled for role "agent".
func hiddenToolEnv(t *testing.T, cfg *Config) (*testChild, *testGateway) {
	t.Helper()
	c := startChild(t, "mail", nil)
	c.srv.AddTools(c.echoTool("mail_send"))
	cfg.Servers = serversOf(c)
	cfg.RESTProxies = append(cfg.RESTProxies, Upstream{Key: "mcp-mail", URL: c.Base})
	tg := startGateway(t, cfg, nil)
	h := map[string]string{}
	if cfg.ControlToken != "" {
		h["Authorization"] = "Bearer " + cfg.ControlToken
	}
	if st, b := tg.post(t, "/tools/disable", h, `{"role":"agent","tools":["mail_send"]}`); st != 200 {
		t.Fatalf("disable = %d %s", st, b)
	}
	waitFor(t, "mail_send discovered", func() bool { return tg.BackingHasTool("mail_send") })
	return c, tg
}

// TestSessionRoleIsBound: a session initialized as agent keeps that role;
// no header trick on a later request reaches a tool hidden from agent.
func TestSessionRoleIsBound(t *testing.T) {
	c, tg := hiddenToolEnv(t, &Config{})
	sid := mcpInit(t, tg.URL, hdr{protocol.HeaderRole, "agent"})
	s := hdr{protocol.HeaderMCPSessionID, sid}
	cases := []struct {
		name   string
		hs     []hdr
		status int
	}{
		{"no role header", []hdr{s}, 200}, // speaks for the session's role: refused as disabled
		{"underscore spelling", []hdr{s, {"AgentEnv_Role", "admin"}}, 400},
		{"underscore spelling next to the real one", []hdr{s, {"AgentEnv_Role", "admin"}, {"AgentEnv-Role", "agent"}}, 400},
		{"other case", []hdr{s, {"agentenv-role", "admin"}}, 403},
		{"upper case", []hdr{s, {"AGENTENV-ROLE", "admin"}}, 403},
		{"second header first", []hdr{s, {"AgentEnv-Role", "admin"}, {"AgentEnv-Role", "agent"}}, 400},
		{"repeated, same value", []hdr{s, {"AgentEnv-Role", "agent"}, {"AgentEnv-Role", "agent"}}, 400},
		{"list value", []hdr{s, {"AgentEnv-Role", "admin, agent"}}, 400},
		{"another role", []hdr{s, {"AgentEnv-Role", "admin"}}, 403},
		{"blank role", []hdr{s, {"AgentEnv-Role", " "}}, 200},
	}
	for _, tc := range cases {
		st, _, b := rawHTTP(t, tg.URL, "POST", "/mcp", tc.hs, callBody("mail_send"))
		if st != tc.status {
			t.Errorf("%s: tools/call = %d %s; want %d", tc.name, st, b, tc.status)
			continue
		}
		if st == 200 && !strings.Contains(string(b), `disabled for role 'agent'`) {
			t.Errorf("%s: tools/call ran as another role: %s", tc.name, b)
		}
		if st != 200 && !strings.Contains(string(b), "AgentEnv") && !strings.Contains(string(b), "role") {
			t.Errorf("%s: refusal does not say why: %s", tc.name, b)
		}
	}
	// The same rules hold in a batch, which is answered per session.
	batch := `[` + callBody("mail_send") + `]`
	if st, _, b := rawHTTP(t, tg.URL, "POST", "/mcp", []hdr{s}, batch); st != 200 || !strings.Contains(string(b), "disabled for role 'agent'") {
		t.Errorf("batch without header = %d %s", st, b)
	}
	if st, _, b := rawHTTP(t, tg.URL, "POST", "/mcp", []hdr{s, {"AgentEnv-Role", "admin"}}, batch); st != 403 {
		t.Errorf("batch as admin = %d %s", st, b)
	}
	// tools/list and the session's GET stream and DELETE are bound too.
	if st, _, b := rawHTTP(t, tg.URL, "POST", "/mcp", []hdr{s, {"AgentEnv-Role", "admin"}}, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); st != 403 {
		t.Errorf("tools/list as admin = %d %s", st, b)
	}
	if st, _, b := rawHTTP(t, tg.URL, "DELETE", "/mcp", []hdr{s, {"AgentEnv-Role", "admin"}}, ""); st != 403 {
		t.Errorf("DELETE as admin = %d %s", st, b)
	}
	if n := c.calls.Load(); n != 0 {
		t.Fatalf("the hidden tool ran %d times", n)
	}
	// The session's own role still works.
	if st, _, b := rawHTTP(t, tg.URL, "POST", "/mcp", []hdr{s, {"AgentEnv-Role", "agent"}}, callBody("mail_echo")); st != 200 || strings.Contains(string(b), "isError\":true") {
		t.Fatalf("own role = %d %s", st, b)
	}
	// A session initialized without a header is bound to default.
	sid2 := mcpInit(t, tg.URL)
	if st, _, b := rawHTTP(t, tg.URL, "POST", "/mcp", []hdr{{protocol.HeaderMCPSessionID, sid2}, {"AgentEnv-Role", "agent"}}, callBody("mail_echo")); st != 403 {
		t.Fatalf("default session as agent = %d %s", st, b)
	}
}

// TestRoleHeaderSpellingsEverywhere: the header rules hold on /step and
// /svc too, so no route reads a role another route would not.
func TestRoleHeaderSpellingsEverywhere(t *testing.T) {
	c, tg := hiddenToolEnv(t, &Config{})
	for _, target := range []string{"/step", "/svc/mcp-mail/agentenv", "/agentenv"} {
		for _, hs := range [][]hdr{
			{{"AgentEnv_Role", "admin"}},
			{{"agentenv_role", "admin"}, {"AgentEnv-Role", "agent"}},
			{{"AgentEnv-Role", "admin"}, {"AgentEnv-Role", "agent"}},
		} {
			body := `{"action":"call_tool","tool_name":"mail_send","arguments":{}}`
			if target != "/step" {
				body = `{"jsonrpc":"2.0","id":1,"method":"data/get","params":{}}`
			}
			st, _, b := rawHTTP(t, tg.URL, "POST", target, hs, body)
			if st != 400 || !strings.Contains(string(b), "AgentEnv") {
				t.Errorf("%s %v = %d %s; want 400 naming the header", target, hs, st, b)
			}
		}
	}
	if n := c.calls.Load(); n != 0 {
		t.Fatalf("the hidden tool ran %d times", n)
	}
}

// countingUpstream answers every request itself (no mux: a redirect would
// already be a request that reached it) and counts them.
type countingUpstream struct {
	hits atomic.Int64
	mu   sync.Mutex
	uris []string
	auth []string
}

func startCountingUpstream(t *testing.T) (*countingUpstream, string) {
	u := &countingUpstream{}
	return u, newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		u.mu.Lock()
		u.uris = append(u.uris, r.RequestURI)
		u.auth = append(u.auth, r.Header.Get("Authorization"))
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
}

// TestSvcRefusesMCP: MCP to a backing server through /svc would skip role
// rules, triggers and the trajectory, so it is refused in every spelling;
// the rest of /svc (the data plane above all) still passes.
func TestSvcRefusesMCP(t *testing.T) {
	up, base := startCountingUpstream(t)
	upPath, upPathBase := startCountingUpstream(t)
	// mcp-p's base URL is itself an MCP endpoint: /svc/mcp-p/ is MCP.
	tg := startGateway(t, &Config{RESTProxies: []Upstream{{"mcp-x", base}, {"web", base}, {"mcp-p", upPathBase + "/mcp"}}}, nil)
	batch := `[` + callBody("t") + `]`
	targets := []string{
		"/svc/mcp-x/mcp", "/svc/mcp-x/mcp/", "/svc/mcp-x//mcp", "/svc/mcp-x/./mcp", "/svc/mcp-x/a/../mcp",
		"/svc/mcp-x/%2e/mcp", "/svc/mcp-x/a/%2e%2e/mcp", "/svc/mcp-x/%6Dcp", "/svc/mcp-x/%6d%63%70/",
		"/svc/mcp-x/%2Fmcp", "/svc/mcp-x/mcp%2F", "/svc/mcp-x/MCP", "/svc/mcp-x/Mcp/sub", "/svc/mcp-x/mcp;v=1",
		"/svc/mcp-x/%252e%252e/mcp", "/svc/mcp-x/%5Cmcp", "/svc/mcp-x/mcp?x=1", "/svc/%6Dcp-x/mcp",
		"/svc/mcp-p/", "/svc/mcp-p/x",
	}
	for _, target := range targets {
		for _, m := range []struct{ method, body string }{{"POST", initBody}, {"POST", batch}, {"GET", ""}, {"DELETE", ""}, {"PUT", "{}"}} {
			before := up.hits.Load() + upPath.hits.Load()
			st, _, b := rawHTTP(t, tg.URL, m.method, target, []hdr{{"AgentEnv-Role", "agent"}, {protocol.HeaderMCPSessionID, "abc"}}, m.body)
			reached := up.hits.Load() + upPath.hits.Load() - before
			if reached != 0 {
				t.Errorf("%s %s reached the backing server (%d): %d %s", m.method, target, reached, st, b)
			}
			if st == 200 {
				t.Errorf("%s %s = 200 %s", m.method, target, b)
			}
			if st == 403 && !strings.Contains(string(b), "call tools through /mcp") {
				t.Errorf("%s %s: refusal does not say why: %s", m.method, target, b)
			}
		}
	}
	// The data plane, other routes and non-mcp services still pass.
	for _, target := range []string{"/svc/mcp-x/agentenv", "/svc/mcp-x/mcpx", "/svc/mcp-x/api/mcp", "/svc/web/mcp"} {
		before := up.hits.Load()
		if st, _, b := rawHTTP(t, tg.URL, "POST", target, nil, `{"jsonrpc":"2.0","id":1,"method":"data/get","params":{}}`); st != 200 || up.hits.Load() != before+1 {
			t.Errorf("%s = %d %s; want it forwarded", target, st, b)
		}
	}
}

// TestSvcMCPHiddenToolRepro: the tester's report: a role that may not call
// a tool on /mcp could call it through /svc/mcp-<x>/mcp.
func TestSvcMCPHiddenToolRepro(t *testing.T) {
	c, tg := hiddenToolEnv(t, &Config{})
	st, _, b := rawHTTP(t, tg.URL, "POST", "/svc/mcp-mail/mcp", []hdr{{"AgentEnv-Role", "agent"}}, initBody)
	if st != 403 {
		t.Fatalf("initialize through /svc = %d %s", st, b)
	}
	if n := c.calls.Load(); n != 0 {
		t.Fatalf("hidden tool ran %d times", n)
	}
}

// TestControlTokenBearerScheme: the auth scheme is case-insensitive (RFC
// 9110); the token itself is not.
func TestControlTokenBearerScheme(t *testing.T) {
	c := startChild(t, "mail", nil)
	tg := startGateway(t, &Config{Servers: serversOf(c), ControlToken: "t0ken"}, nil)
	body := `{"role":"default","tools":["mail_echo"]}`
	for _, a := range []string{"Bearer t0ken", "bearer t0ken", "BEARER t0ken", "BeArEr   t0ken"} {
		if st, b := tg.post(t, "/tools/disable", map[string]string{"Authorization": a}, body); st != 200 {
			t.Errorf("%q → %d %s", a, st, b)
		}
	}
	for _, a := range []string{"Bearer T0KEN", "Basic t0ken", "Bearert0ken", "Bearer"} {
		if st, b := tg.post(t, "/tools/disable", map[string]string{"Authorization": a}, body); st != 401 {
			t.Errorf("%q → %d %s", a, st, b)
		}
	}
	// Two Authorization headers are not a credential.
	if st, _, b := rawHTTP(t, tg.URL, "POST", "/tools/disable", []hdr{{"Authorization", "Bearer t0ken"}, {"Authorization", "Bearer x"}}, body); st != 401 {
		t.Errorf("two Authorization headers → %d %s", st, b)
	}
	// Spellings of the control paths do not slip past the door.
	for _, target := range []string{"/tools/%65nable", "//tools/enable", "/x/../tools/enable", "/triggers/./clear"} {
		st, _, b := rawHTTP(t, tg.URL, "POST", target, nil, body)
		if st == 200 {
			t.Errorf("%s without the token → 200 %s", target, b)
		}
	}
}

// TestControlTokenGuardsDataPlane: with a control token, the data plane
// (env-level and per server) and the rest of /svc/mcp-* need it; GET
// /clock/time stays open for backing servers; the token never reaches an
// upstream.
func TestControlTokenGuardsDataPlane(t *testing.T) {
	up, base := startCountingUpstream(t)
	c := startChild(t, "mail", nil)
	tg := startGateway(t, &Config{Servers: serversOf(c), ControlToken: "t0ken",
		RESTProxies: []Upstream{{"mcp-mail", c.Base}, {"mcp-up", base}, {"web", base}}}, nil)
	dp := `{"jsonrpc":"2.0","id":1,"method":"data/get","params":{}}`
	for _, target := range []string{"/agentenv", "/svc/mcp-mail/agentenv", "/svc/mcp-up/anything"} {
		if st, _, b := rawHTTP(t, tg.URL, "POST", target, []hdr{{"AgentEnv-Role", "agent"}}, dp); st != 401 {
			t.Errorf("%s without token = %d %s", target, st, b)
		}
	}
	// /agentenv needs exactly one mcp-* child: use the per-server route.
	if st, _, b := rawHTTP(t, tg.URL, "POST", "/svc/mcp-mail/agentenv", []hdr{{"Authorization", "bearer t0ken"}}, dp); st != 200 || !strings.Contains(string(b), `"child":"mail"`) {
		t.Errorf("data plane with token = %d %s", st, b)
	}
	before := up.hits.Load()
	if st, _, b := rawHTTP(t, tg.URL, "POST", "/svc/mcp-up/anything", []hdr{{"Authorization", "Bearer t0ken"}}, dp); st != 200 || up.hits.Load() != before+1 {
		t.Fatalf("/svc with token = %d %s", st, b)
	}
	if st, _, _ := rawHTTP(t, tg.URL, "POST", "/svc/web/x", []hdr{{"Authorization", "Bearer upstream-secret"}}, dp); st != 200 {
		t.Fatalf("non-mcp service = %d", st)
	}
	up.mu.Lock()
	auth := append([]string(nil), up.auth...)
	up.mu.Unlock()
	if auth[0] != "" || auth[1] != "Bearer upstream-secret" {
		t.Fatalf("Authorization upstream: %q (the control token must not be forwarded; others are)", auth)
	}
	if st, b := tg.get(t, "/clock/time", nil); st == 401 {
		t.Fatalf("GET /clock/time = %d %s", st, b)
	}
	if st, b := tg.get(t, "/clock/state", nil); st != 401 {
		t.Fatalf("GET /clock/state = %d %s", st, b)
	}
}

// TestControlTokenWarning: a gateway started without a control token says
// so at start.
func TestControlTokenWarning(t *testing.T) {
	var buf safeBuffer
	c := startChild(t, "mail", nil)
	opts := testOptions()
	opts.Logger = slogTo(&buf)
	startGateway(t, &Config{Servers: serversOf(c)}, opts)
	if !strings.Contains(buf.String(), "GATEWAY_CONTROL_TOKEN is not set") {
		t.Fatalf("no warning in %s", buf.String())
	}
}

// TestJSONRPCVersionChecked: every method answers -32600 to a message that
// is not JSON-RPC 2.0; an empty batch is an Invalid Request; GET and
// DELETE need a known session.
func TestJSONRPCVersionChecked(t *testing.T) {
	c := startChild(t, "mail", nil)
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	sid := mcpInit(t, tg.URL)
	s := []hdr{{protocol.HeaderMCPSessionID, sid}}
	for _, body := range []string{
		`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"mail_echo","arguments":{}}}`,
		`{"id":1,"method":"tools/call","params":{"name":"mail_echo","arguments":{}}}`,
		`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":null,"id":1,"method":"tools/list"}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
	} {
		_, _, b := rawHTTP(t, tg.URL, "POST", "/mcp", s, body)
		var m struct {
			Error *protocol.Error `json:"error"`
		}
		if json.Unmarshal(b, &m) != nil || m.Error == nil || m.Error.Code != protocol.CodeInvalidRequest {
			t.Errorf("%s → %s; want -32600", body, b)
		}
	}
	if n := c.calls.Load(); n != 0 {
		t.Errorf("a tool ran %d times", n)
	}
	st, _, b := rawHTTP(t, tg.URL, "POST", "/mcp", s, `[]`)
	if st != 400 || !strings.Contains(string(b), `"code":-32600`) {
		t.Errorf("[] → %d %s; want -32600", st, b)
	}
	st, _, b = rawHTTP(t, tg.URL, "POST", "/mcp", s, `[{"jsonrpc":"1.0","id":3,"method":"tools/list"},1]`)
	if st != 200 || strings.Count(string(b), `"code":-32600`) != 2 {
		t.Errorf("bad batch → %d %s; want two -32600", st, b)
	}
	if st, _, b := rawHTTP(t, tg.URL, "GET", "/mcp", []hdr{{"Accept", "text/event-stream"}}, ""); st != 400 {
		t.Errorf("GET without session = %d %s", st, b)
	}
	if st, _, b := rawHTTP(t, tg.URL, "GET", "/mcp", []hdr{{"Accept", "text/event-stream"}, {protocol.HeaderMCPSessionID, "0123456789abcdef0123456789abcdef"}}, ""); st != 404 {
		t.Errorf("GET unknown session = %d %s", st, b)
	}
	if st, _, b := rawHTTP(t, tg.URL, "DELETE", "/mcp", []hdr{{protocol.HeaderMCPSessionID, "0123456789abcdef0123456789abcdef"}}, ""); st != 404 {
		t.Errorf("DELETE unknown session = %d %s", st, b)
	}
	if st, _, b := rawHTTP(t, tg.URL, "DELETE", "/mcp", s, ""); st != 200 {
		t.Errorf("DELETE own session = %d %s", st, b)
	}
}

// safeBuffer is a bytes.Buffer for a logger written from several goroutines.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// bearerRT adds a bearer token (and optionally a forged role header) to
// every request of an MCP client.
type bearerRT struct {
	token, role string
	next        http.RoundTripper
}

func (b bearerRT) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	if b.role != "" {
		req.Header.Set(protocol.HeaderRole, b.role)
	}
	return b.next.RoundTrip(req)
}

// TestRoleCredentials: with GATEWAY_ROLE_TOKENS=required a forged role
// header gets nothing without a credential, and with one the credential's
// role wins; the control token speaks for the header's role; no token
// reaches the logs.
func TestRoleCredentials(t *testing.T) {
	var logs safeBuffer
	opts := testOptions()
	opts.Logger = slogTo(&logs)
	c := startChild(t, "mail", nil)
	c.srv.AddTools(c.echoTool("mail_send"))
	const ctl = "ctl-secret-0123"
	web := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"role": r.Header.Get(protocol.HeaderRole), "auth": r.Header.Get("Authorization")})
	}))
	tg := startGateway(t, &Config{Servers: serversOf(c), ControlToken: ctl, RoleAuth: RoleAuthRequired,
		RESTProxies: []Upstream{{Key: "mcp-mail", URL: c.Base}, {Key: "web", URL: web}}}, opts)
	operator := map[string]string{"Authorization": "Bearer " + ctl}
	if st, b := tg.post(t, "/tools/disable", operator, `{"role":"agent","tools":["mail_send"]}`); st != 200 {
		t.Fatalf("disable = %d %s", st, b)
	}
	waitFor(t, "mail_send discovered", func() bool { return tg.BackingHasTool("mail_send") })
	agentTok, adminTok := protocol.RoleToken(ctl, "agent"), protocol.RoleToken(ctl, "admin")
	step := `{"action":"call_tool","tool_name":"mail_send","arguments":{}}`

	for _, tc := range []struct {
		name   string
		hs     []hdr
		status int
	}{
		{"forged header, no credential", []hdr{{"AgentEnv-Role", "admin"}}, 401},
		{"no header, no credential", nil, 401},
		{"a credential of another gateway", []hdr{{"Authorization", "Bearer " + protocol.RoleToken("other", "admin")}}, 401},
		{"a tampered credential", []hdr{{"Authorization", "Bearer " + strings.Replace(agentTok, "YWdlbnQ", "YWRtaW4", 1)}}, 401},
		{"agent credential, forged admin header", []hdr{{"Authorization", "Bearer " + agentTok}, {"AgentEnv-Role", "admin"}}, 403},
		{"agent credential", []hdr{{"Authorization", "bearer " + agentTok}}, 403},
		{"admin credential", []hdr{{"Authorization", "Bearer " + adminTok}, {"AgentEnv-Role", "agent"}}, 200},
		{"control token as admin", []hdr{{"Authorization", "Bearer " + ctl}, {"AgentEnv-Role", "admin"}}, 200},
		{"control token as agent", []hdr{{"Authorization", "Bearer " + ctl}, {"AgentEnv-Role", "agent"}}, 403},
	} {
		st, _, b := rawHTTP(t, tg.URL, "POST", "/step", tc.hs, step)
		if st != tc.status {
			t.Errorf("/step %s = %d %s; want %d", tc.name, st, b, tc.status)
		}
	}
	if n := c.calls.Load(); n != 2 {
		t.Fatalf("mail_send ran %d times; want 2 (admin credential, control token as admin)", n)
	}

	// /mcp: no session without a credential.
	if st, _, b := rawHTTP(t, tg.URL, "POST", "/mcp", []hdr{{"AgentEnv-Role", "admin"}}, initBody); st != 401 {
		t.Fatalf("initialize without credential = %d %s", st, b)
	}
	// The official go-sdk client with the agent's credential and a forged
	// header: the session is the agent's.
	cl := sdk.NewClient(&sdk.Implementation{Name: "interop", Version: "0"}, nil)
	cs, err := cl.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: tg.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerRT{agentTok, "admin", http.DefaultTransport}}},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("go-sdk connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "mail_send", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "disabled for role 'agent'") {
		t.Fatalf("go-sdk call as agent with a forged header: %v %+v", err, res)
	}
	res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "mail_echo", Arguments: map[string]any{"msg": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("go-sdk call of a visible tool: %v %+v", err, res)
	}
	if m := c.lastMeta(t); m[protocol.MetaRole] != "agent" {
		t.Fatalf("child saw role %v", m[protocol.MetaRole])
	}
	// Without the control token an agent credential does not open the
	// data plane or the control routes.
	for _, target := range []string{"/svc/mcp-mail/agentenv", "/agentenv", "/tools/enable"} {
		st, _, b := rawHTTP(t, tg.URL, "POST", target, []hdr{{"Authorization", "Bearer " + agentTok}}, `{"role":"agent","tools":"*"}`)
		if st != 401 {
			t.Errorf("%s with an agent credential = %d %s", target, st, b)
		}
	}
	// Website upstreams take no credential (browsers cannot send one); the
	// role header is still replaced by the gateway's attribution.
	if st, _, b := rawHTTP(t, tg.URL, "POST", "/svc/web/page", []hdr{{"AgentEnv-Role", "agent"}}, `{}`); st != 200 || !strings.Contains(string(b), `"role":"agent"`) {
		t.Errorf("website upstream without a credential = %d %s", st, b)
	}
	if st, _, b := rawHTTP(t, tg.URL, "POST", "/svc/web/page", []hdr{{"Authorization", "Bearer " + adminTok}}, `{}`); st != 200 || !strings.Contains(string(b), `"role":"admin"`) || strings.Contains(string(b), "aer1") {
		t.Errorf("website upstream with a credential = %d %s", st, b)
	}
	for _, secret := range []string{ctl, agentTok, adminTok} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("a token reached the logs")
		}
	}
}

func TestRoleTokensConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ConfigFromEnv(env(map[string]string{"GATEWAY_CONTROL_TOKEN": "x", "GATEWAY_ROLE_TOKENS": "required"}))
	if err != nil || c.RoleAuth != RoleAuthRequired {
		t.Fatalf("required: %v %v", c, err)
	}
	if _, err := ConfigFromEnv(env(map[string]string{"GATEWAY_ROLE_TOKENS": "yes"})); err == nil || !strings.Contains(err.Error(), "GATEWAY_ROLE_TOKENS") {
		t.Fatalf("bad value: %v", err)
	}
	if _, err := New(&Config{RoleAuth: RoleAuthRequired}, &Options{Logger: quiet}); err == nil || !strings.Contains(err.Error(), "GATEWAY_CONTROL_TOKEN") {
		t.Fatalf("required without a control token: %v", err)
	}
}
