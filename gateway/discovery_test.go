package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentenv/agentenv/protocol"
)

type roleRT struct {
	role string
	next http.RoundTripper
}

func (r roleRT) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(protocol.HeaderRole, r.role)
	return r.next.RoundTrip(req)
}

// sdkAgent connects the official go-sdk client (an independent MCP peer).
func sdkAgent(t *testing.T, url, roleName string) (*sdk.ClientSession, *atomic.Int64) {
	t.Helper()
	var changed atomic.Int64
	c := sdk.NewClient(&sdk.Implementation{Name: "interop", Version: "0"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed.Add(1) },
	})
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: roleRT{roleName, http.DefaultTransport}}},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("go-sdk connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("negotiated %s", v)
	}
	return cs, &changed
}

func sdkNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	return out
}

func TestListChangedReachesGoSDKAgents(t *testing.T) {
	c := startChild(t, "items", nil)
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	cs, changed := sdkAgent(t, tg.URL+"/mcp", "agent")
	other, otherChanged := sdkAgent(t, tg.URL+"/mcp", "bystander")
	if names := sdkNames(t, cs); !slices.Equal(names, []string{"items_echo"}) {
		t.Fatalf("go-sdk sees %v", names)
	}
	sdkNames(t, other)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "items_echo", Arguments: map[string]any{"msg": "hi"}})
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != `{"msg":"hi"}` {
		t.Fatalf("go-sdk call: %v %+v", err, res)
	}
	if c.lastMeta(t)[protocol.MetaRole] != "agent" {
		t.Fatal("go-sdk role header not attributed")
	}

	// A role rule that changes what "agent" sees notifies it, and not the
	// bystander, whose view did not change.
	tg.rule(t, "disable", `{"role":"agent","tools":["items_echo"]}`)
	waitFor(t, "list_changed after a role rule", func() bool { return changed.Load() == 1 })
	if names := sdkNames(t, cs); len(names) != 0 {
		t.Fatalf("after disable: %v", names)
	}
	if otherChanged.Load() != 0 {
		t.Fatal("bystander notified although its view did not change")
	}

	// A child that adds a tool and sends list_changed: the gateway re-lists
	// that server and notifies agents (both directions).
	c.srv.AddTools(c.echoTool("items_new"))
	waitFor(t, "re-discovery", func() bool { _, ok := tg.reg.lookup("items_new"); return ok })
	waitFor(t, "list_changed after re-discovery", func() bool { return changed.Load() == 2 && otherChanged.Load() == 1 })
	if names := sdkNames(t, other); !slices.Equal(names, []string{"items_echo", "items_new"}) {
		t.Fatalf("after re-discovery: %v", names)
	}
}

func TestCollisionsAndPrefixes(t *testing.T) {
	a := startChild(t, "a", nil)
	a.srv.AddTools(a.echoTool("shared"), a.echoTool("list_website_urls"))
	b := startChild(t, "b", nil)
	b.srv.AddTools(b.echoTool("shared"), b.echoTool("b_own"), b.echoTool("bad.name"))
	web := []Upstream{{"w", "http://w.example"}}

	// skip: the first server keeps the name; the backing tool beats the native one.
	skip := startGateway(t, &Config{Servers: serversOf(a, b), Websites: web}, nil)
	names := skip.mcpClient(t, "").toolNames(t)
	want := []string{"a_echo", "list_website_urls", "shared", "b_echo", "b_own", "bad.name"}
	if !slices.Equal(names, want) {
		t.Fatalf("skip names %v; want %v", names, want)
	}
	skip.mcpClient(t, "").call(t, "shared", map[string]any{})
	if a.calls.Load() != 1 || b.calls.Load() != 0 {
		t.Fatal("shared must route to the first server")
	}
	skip.mcpClient(t, "").call(t, "list_website_urls", map[string]any{})
	if a.calls.Load() != 2 {
		t.Fatal("a backing list_website_urls must win over the native one")
	}
	_, state := skip.get(t, "/state", nil)
	for _, msg := range []string{
		"Duplicate tool name 'shared': already registered from 'a', cannot register from 'b'",
		"Duplicate tool name 'list_website_urls': already registered from 'a', cannot register from 'gateway'",
	} {
		if !strings.Contains(string(state), msg) {
			t.Errorf("/state lacks %q: %s", msg, state)
		}
	}

	// fail: the reference behaviour, no tools and /step 503.
	fail := startGateway(t, &Config{Servers: serversOf(a, b), Collisions: CollisionFail}, nil, true)
	waitFor(t, "fail-mode discovery", func() bool {
		_, body := fail.get(t, "/readyz", nil)
		return strings.Contains(string(body), "discovery_error")
	})
	if st, _ := fail.post(t, "/step", nil, `{"action":"list_tools"}`); st != 503 {
		t.Fatalf("/step in fail mode = %d", st)
	}

	// server prefix: <server>_<tool> unless already prefixed; invalid names skipped.
	pre := startGateway(t, &Config{Servers: serversOf(a, b), Prefix: PrefixServer}, nil)
	pc := pre.mcpClient(t, "")
	names = pc.toolNames(t)
	want = []string{"a_echo", "a_list_website_urls", "a_shared", "b_echo", "b_own", "b_shared"}
	if !slices.Equal(names, want) {
		t.Fatalf("prefixed names %v; want %v", names, want)
	}
	before := b.calls.Load()
	if out := pc.call(t, "b_shared", map[string]any{"k": 1}); out.IsError {
		t.Fatal(out.text())
	}
	if b.calls.Load() != before+1 {
		t.Fatal("b_shared did not reach b")
	}
	raw := rawTools(t, pc.raw(t, "tools/list", map[string]any{}))
	if !bytes.Contains(raw["b_shared"], []byte(`"name":"b_shared"`)) || !bytes.Contains(raw["b_shared"], []byte(`"description":"Echo the arguments."`)) {
		t.Fatalf("renamed descriptor %s", raw["b_shared"])
	}
	_, state = pre.get(t, "/state", nil)
	if !strings.Contains(string(state), "Invalid tool name 'b_bad.name'") {
		t.Fatalf("invalid name not reported: %s", state)
	}
	// Names are identical with one server.
	solo := startGateway(t, &Config{Servers: serversOf(b), Prefix: PrefixServer}, nil)
	if names := solo.mcpClient(t, "").toolNames(t); !slices.Equal(names, []string{"b_echo", "b_own", "b_shared"}) {
		t.Fatalf("single-server prefixed names %v", names)
	}
}

// TestDeadSessionTable pins the dead-session rule: a call that never reached the child is
// retried once on a new generation (with the same _meta); a call lost
// after it was sent is not retried; the generation is reset once.
func TestDeadSessionTable(t *testing.T) {
	c := startChild(t, "items", nil)
	var mode atomic.Value // "404" | "cut" | ""
	mode.Store("")
	var inits, cuts atomic.Int64
	c.inter.Store(func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			inits.Add(1)
		}
		if !bytes.Contains(body, []byte(`"tools/call"`)) {
			return false
		}
		switch mode.Load() {
		case "404":
			mode.Store("")
			http.Error(w, "session not found", http.StatusNotFound)
			return true
		case "cut":
			cuts.Add(1)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return true
		}
		return false
	})
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	a := tg.mcpClient(t, "agent")
	if out := a.call(t, "items_echo", map[string]any{}); out.IsError {
		t.Fatal(out.text())
	}
	startInits := inits.Load()

	mode.Store("404")
	out := a.call(t, "items_echo", map[string]any{"n": 1})
	if out.IsError || out.text() != `{"n":1}` {
		t.Fatalf("never-reached call not retried: %+v", out)
	}
	if inits.Load() != startInits+1 {
		t.Fatalf("reopens: %d", inits.Load()-startInits)
	}
	if m := c.lastMeta(t); m[protocol.MetaRole] != "agent" || len(m[protocol.MetaSession].(string)) != 32 {
		t.Fatalf("_meta on the retry %v", m)
	}

	mode.Store("cut")
	out = a.call(t, "items_echo", map[string]any{})
	if !out.IsError || !strings.HasPrefix(out.text(), "Error executing tool items_echo: ") {
		t.Fatalf("cut call = %+v", out)
	}
	if cuts.Load() != 1 {
		t.Fatalf("a call that may have run was sent %d times", cuts.Load())
	}
	mode.Store("")
	if out := a.call(t, "items_echo", map[string]any{}); out.IsError {
		t.Fatalf("after a cut: %s", out.text())
	}
}

func TestConcurrentDeathsResetOnce(t *testing.T) {
	c := startChild(t, "items", nil)
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	ch := tg.children[0]
	g1, err := ch.session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	retired := 0
	for i := 0; i < 5; i++ {
		if ch.retire(g1) {
			retired++
		}
	}
	if retired != 1 {
		t.Fatalf("retired %d times", retired)
	}
	g2, err := ch.session(context.Background())
	if err != nil || g2 == g1 {
		t.Fatalf("no new generation: %v", err)
	}
}

func TestChildRestartIsRediscovered(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	c := startChild(t, "items", &childOpts{addr: addr})
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	a := tg.mcpClient(t, "")
	a.call(t, "items_echo", map[string]any{})
	// The child restarts with a new tool (and no memory of our session).
	c.hs.CloseClientConnections()
	c.hs.Close()
	c2 := startChild(t, "items", &childOpts{addr: addr})
	c2.srv.AddTools(c2.echoTool("items_v2"))
	// The first call may land on a keep-alive connection the old child
	// closed; if the bytes were written, the gateway must not retry it
	// (the call may have run), so allow one tool error before success.
	out := a.call(t, "items_echo", map[string]any{"again": true})
	if out.IsError {
		t.Logf("first call after the restart: %s", out.text())
		out = a.call(t, "items_echo", map[string]any{"again": true})
	}
	if out.IsError {
		t.Fatalf("call after restart: %s", out.text())
	}
	waitFor(t, "re-listing after the reopen", func() bool { _, ok := tg.reg.lookup("items_v2"); return ok })
	waitFor(t, "list_changed after the reopen", func() bool { return a.changed.Load() >= 1 })
}

func TestReadinessAndStartingGate(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	tg := startGateway(t, &Config{Servers: []Server{{Name: "late", URL: "http://" + addr + "/mcp"}}}, nil, true)
	if st, body := tg.get(t, "/healthz", nil); st != 200 || string(body) != `{"status":"ok"}`+"\n" {
		t.Fatalf("/healthz = %d %s", st, body)
	}
	st, body := tg.get(t, "/readyz", nil)
	if st != 503 || string(body) != `{"ready":false,"servers":{"late":"waiting"}}`+"\n" {
		t.Fatalf("/readyz = %d %s", st, body)
	}
	for _, p := range []string{"/step", "/state", protocol.EnvCardPath, "/mcp"} {
		st, body, _ := tg.do(t, "POST", p, nil, `{}`)
		if p == "/state" || p == protocol.EnvCardPath {
			st, body, _ = tg.do(t, "GET", p, nil, "")
		}
		if st != 503 || mustJSONMap(t, body)["error"] != "gateway starting: waiting for internal MCP servers" {
			t.Fatalf("%s while starting = %d %s", p, st, body)
		}
	}
	// The server comes up: readiness follows.
	startChild(t, "late", &childOpts{addr: addr})
	waitFor(t, "ready", func() bool { st, _ := tg.get(t, "/readyz", nil); return st == 200 })
	_, body = tg.get(t, "/readyz", nil)
	var r struct {
		Ready   bool
		Servers map[string]string
	}
	json.Unmarshal(body, &r)
	if !r.Ready || r.Servers["late"] != "ready" {
		t.Fatalf("/readyz = %s", body)
	}
}

func TestStartupDeadlineFailsRun(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	g, err := New(&Config{Servers: []Server{{Name: "never", URL: "http://" + addr + "/mcp"}},
		ServerTimeout: 100e6, TrajectoryFile: t.TempDir() + "/t.jsonl"}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	err = g.Run(context.Background(), ln)
	if err == nil || !strings.Contains(err.Error(), "never") {
		t.Fatalf("Run = %v; want a startup failure naming the server", err)
	}
}

func TestRunShutsDownWithConnectedAgents(t *testing.T) {
	c := startChild(t, "items", nil)
	g, err := New(&Config{Servers: serversOf(c), TrajectoryFile: t.TempDir() + "/t.jsonl"}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, ln) }()
	tg := &testGateway{Gateway: g, URL: "http://" + ln.Addr().String()}
	waitFor(t, "ready", func() bool { st, _ := tg.get(t, "/readyz", nil); return st == 200 })
	a := tg.mcpClient(t, "") // holds a listening stream open
	a.call(t, "items_echo", map[string]any{})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("shutdown blocked by a connected agent")
	}
}

// TestProtocolVersionsRestricted: an unpinned go-sdk client would negotiate
// 2026-07-28 with a default mcp-go server; ours offers 2025-11-25 at most,
// and serverInfo.name is MCP_SERVER_NAME.
func TestProtocolVersionsRestricted(t *testing.T) {
	tg := startGateway(t, &Config{Name: "office"}, nil)
	c := sdk.NewClient(&sdk.Implementation{Name: "interop", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: tg.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	ir := cs.InitializeResult()
	if ir.ProtocolVersion != "2025-11-25" || ir.ServerInfo.Name != "office" || ir.Capabilities.Tools == nil || !ir.Capabilities.Tools.ListChanged {
		t.Fatalf("initialize result %+v (tools %+v)", ir, ir.Capabilities.Tools)
	}
}

// TestOpenSurvivesAnImpatientCaller: the caller that triggered a child
// session open gives up; the open goes on and serves the next caller.
func TestOpenSurvivesAnImpatientCaller(t *testing.T) {
	c := startChild(t, "slow", nil)
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	ch := tg.children[0]
	// Retire the current generation and hold the next initialize.
	g0, _ := ch.session(context.Background())
	ch.retire(g0)
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open) // never leave the child's handler blocked
	c.inter.Store(func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			<-release
		}
		return false
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := ch.session(ctx)
		errc <- err
	}()
	waitFor(t, "the open to start", func() bool {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		return ch.opening != nil
	})
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("impatient caller: %v", err)
	}
	open()
	g1, err := ch.session(context.Background())
	if err != nil || g1 == nil || g1 == g0 {
		t.Fatalf("patient caller: %v", err)
	}
}

// TestFailingServerIsRetried: a server whose tools/list fails is reported
// and retried with backoff while the others are served; once it answers,
// its tools appear and agents are told.
func TestFailingServerIsRetried(t *testing.T) {
	good := startChild(t, "good", nil)
	flaky := startChild(t, "flaky", nil)
	var failing atomic.Bool
	failing.Store(true)
	flaky.inter.Store(func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if failing.Load() && bytes.Contains(body, []byte(`"tools/list"`)) {
			http.Error(w, "database warming up", http.StatusInternalServerError)
			return true
		}
		return false
	})
	tg := startGateway(t, &Config{Servers: serversOf(good, flaky)}, nil)
	_, ready := tg.get(t, "/readyz", nil)
	if !strings.Contains(string(ready), `"flaky":"error: `) || !strings.Contains(string(ready), `"good":"ready"`) {
		t.Fatalf("/readyz %s", ready)
	}
	a := tg.mcpClient(t, "")
	if names := a.toolNames(t); !slices.Equal(names, []string{"good_echo"}) {
		t.Fatalf("served while flaky fails: %v", names)
	}
	failing.Store(false)
	waitFor(t, "the flaky server to be listed", func() bool { _, ok := tg.reg.lookup("flaky_echo"); return ok })
	waitFor(t, "list_changed", func() bool { return a.changed.Load() >= 1 })
	_, ready = tg.get(t, "/readyz", nil)
	if !strings.Contains(string(ready), `"flaky":"ready"`) {
		t.Fatalf("/readyz after recovery %s", ready)
	}
}
