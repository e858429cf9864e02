package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// upstream records what the proxy sent.
type upstream struct {
	mu      sync.Mutex
	last    *http.Request
	body    []byte
	uri     string
	hits    atomic.Int64
	release chan struct{}
	closed  chan struct{}
}

func startUpstream(t *testing.T) (*upstream, string) {
	u := &upstream{release: make(chan struct{}), closed: make(chan struct{}, 4)}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.last, u.body, u.uri = r, b, r.RequestURI
		u.mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/base/stream"):
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("first chunk\n"))
			w.(http.Flusher).Flush()
			select {
			case <-u.release:
				w.Write([]byte("second chunk\n"))
			case <-r.Context().Done():
				u.closed <- struct{}{}
			}
		case strings.HasPrefix(r.URL.Path, "/base/cookies"):
			w.Header().Add("Set-Cookie", "a=1")
			w.Header().Add("Set-Cookie", "b=2")
			w.Header().Set("X-Name", "café ✓")
			w.Header().Set("Server", "upstream/1")
			w.Header().Set("Date", "Mon, 01 Jan 2001 00:00:00 GMT")
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Length", "3")
			w.Write([]byte("abc"))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"ok":true}`))
		}
	})
	return u, newLoopbackServer(t, mux)
}

func (u *upstream) lastReq() (*http.Request, []byte, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last, u.body, u.uri
}

func TestProxyStreamsAndHeaders(t *testing.T) {
	up, base := startUpstream(t)
	tg := startGateway(t, &Config{RESTProxies: []Upstream{{"mcp-x", base + "/base"}}}, nil)

	// The first chunk arrives before the upstream finishes.
	resp, err := http.Get(tg.URL + "/svc/mcp-x/stream")
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "first chunk\n" {
		t.Fatalf("first chunk %q %v", line, err)
	}
	close(up.release)
	resp.Body.Close()

	// Headers: repeated Set-Cookie and UTF-8 values intact; date/server
	// dropped; bytes not decoded.
	req, _ := http.NewRequest("GET", tg.URL+"/svc/mcp-x/cookies", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := resp.Header.Values("Set-Cookie"); len(got) != 2 || got[0] != "a=1" || got[1] != "b=2" {
		t.Fatalf("Set-Cookie %v", got)
	}
	if resp.Header.Get("X-Name") != "café ✓" || resp.Header.Get("Server") != "" || resp.Header.Get("Date") == "Mon, 01 Jan 2001 00:00:00 GMT" || resp.Header.Get("Content-Encoding") != "gzip" || string(b) != "abc" {
		t.Fatalf("headers %v body %q", resp.Header, b)
	}
	// HEAD keeps the upstream's length.
	req, _ = http.NewRequest("HEAD", tg.URL+"/svc/mcp-x/cookies", nil)
	resp, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ContentLength != 3 || resp.Header.Get("Content-Length") != "3" {
		t.Fatalf("HEAD length %d %v", resp.ContentLength, resp.Header)
	}

	// Request headers: role replaced, hop-by-hop dropped, identity added,
	// repeated headers kept, query and encoded segments verbatim.
	req, _ = http.NewRequest("GET", tg.URL+"/svc/mcp-x/a%2Fb/%E2%9C%93/c%3Fd?q=1&q=%20x", nil)
	req.Header.Add(protocol.HeaderRole, " admin ")
	req.Header.Add("X-Multi", "1")
	req.Header.Add("X-Multi", "2")
	req.Header.Set("Connection", "close, X-Drop")
	req.Header.Set("X-Drop", "secret")
	req.Header.Set("Proxy-Authorization", "Basic x")
	// A client that sends no Accept-Encoding at all.
	plain := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err = plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got, _, uri := up.lastReq()
	if uri != "/base/a%2Fb/%E2%9C%93/c%3Fd?q=1&q=%20x" {
		t.Fatalf("upstream request-target %q", uri)
	}
	if v := got.Header.Values(protocol.HeaderRole); len(v) != 1 || v[0] != "admin" {
		t.Fatalf("role header %v; want the gateway's attribution", v)
	}
	if got.Header.Get("Accept-Encoding") != "identity" || len(got.Header.Values("X-Multi")) != 2 ||
		got.Header.Get("X-Drop") != "" || got.Header.Get("Proxy-Authorization") != "" {
		t.Fatalf("upstream headers %v", got.Header)
	}
	req, _ = http.NewRequest("GET", tg.URL+"/svc/mcp-x/r", nil)
	req.Header.Set(protocol.HeaderRole, " agent ")
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if got, _, _ := up.lastReq(); got.Header.Get(protocol.HeaderRole) != "agent" {
		t.Fatalf("role %q", got.Header.Get(protocol.HeaderRole))
	}
}

func TestProxyErrors(t *testing.T) {
	up, base := startUpstream(t)
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadURL := "http://" + dead.Addr().String()
	dead.Close()
	tg := startGateway(t, &Config{RESTProxies: []Upstream{{"mcp-x", base}, {"gone", deadURL}},
		Websites: []Upstream{{"site", base + "/base"}}}, nil)

	st, body := tg.get(t, "/svc/nope/x", nil)
	if st != 404 || mustJSONMap(t, body)["error"] != "Unknown service: nope" || up.hits.Load() != 0 {
		t.Fatalf("unknown service = %d %s (hits %d)", st, body, up.hits.Load())
	}
	st, body = tg.get(t, "/svc/mcp-x%2Fy/z", nil)
	if st != 400 || !strings.Contains(string(body), "percent-encoded slash in the route prefix") {
		t.Fatalf("escaped slash = %d %s", st, body)
	}
	st, body = tg.get(t, "/svc/gone/x", nil)
	if st != 502 || !strings.HasPrefix(mustJSONMap(t, body)["error"].(string), "Proxy request failed: ConnectError(") {
		t.Fatalf("connect error = %d %s", st, body)
	}
	if st, _ := tg.get(t, "/svc/mcp-x", nil); st != 404 {
		t.Fatalf("bare /svc/{service} = %d; want no route", st)
	}
	// /website/{service} maps to the base.
	tg.get(t, "/website/site", nil)
	if _, _, uri := up.lastReq(); uri != "/base" {
		t.Fatalf("/website/site → %q", uri)
	}
	tg.get(t, "/website/site/p?x=1", nil)
	if _, _, uri := up.lastReq(); uri != "/base/p?x=1" {
		t.Fatalf("/website/site/p → %q", uri)
	}
}

func TestProxyClientDisconnectClosesUpstream(t *testing.T) {
	up, base := startUpstream(t)
	tg := startGateway(t, &Config{RESTProxies: []Upstream{{"mcp-x", base + "/base"}}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", tg.URL+"/svc/mcp-x/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	bufio.NewReader(resp.Body).ReadString('\n')
	cancel()
	resp.Body.Close()
	select {
	case <-up.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("upstream request not cancelled after the client left")
	}
}

func TestDataPlane(t *testing.T) {
	c := startChild(t, "slack", nil)
	other := startChild(t, "mail", nil)
	one := startGateway(t, &Config{RESTProxies: []Upstream{{"mcp-slack", c.Base}, {"website", other.Base}}}, nil)
	body := `{"jsonrpc":"2.0","id":"x","method":"data/add","params":{"parts":[{"kind":"data","data":{"a":1}}]}}`
	st, resp := one.post(t, "/agentenv", role("runner"), body)
	if st != 200 || string(resp) != `{"jsonrpc":"2.0","id":1,"result":{"child":"slack","role":"runner"}}` {
		t.Fatalf("forward = %d %s", st, resp)
	}
	if got, _ := c.lastDP.Load().([]byte); string(got) != body {
		t.Fatalf("child got %s", got)
	}
	rpc := func(tg *testGateway, b string) (int64, string) {
		_, r := tg.post(t, "/agentenv", nil, b)
		var out struct {
			ID    json.RawMessage
			Error *protocol.Error
		}
		json.Unmarshal(r, &out)
		if out.Error == nil {
			t.Fatalf("%s: no error: %s", b, r)
		}
		return out.Error.Code, out.Error.Message
	}
	for _, tc := range []struct {
		body string
		code int64
		msg  string
	}{
		{`{bad`, -32700, "Parse error"},
		{`[]`, -32600, "Invalid request"},
		{`{"jsonrpc":"1.0","method":"data/get"}`, -32600, "Invalid request"},
		{`{"jsonrpc":"2.0","id":1,"method":"data/drop"}`, -32601, "Method not found: data/drop"},
	} {
		if code, msg := rpc(one, tc.body); code != tc.code || msg != tc.msg {
			t.Errorf("%s → %d %q; want %d %q", tc.body, code, msg, tc.code, tc.msg)
		}
	}
	two := startGateway(t, &Config{RESTProxies: []Upstream{{"mcp-slack", c.Base}, {"mcp-mail", other.Base}}}, nil)
	if code, msg := rpc(two, `{"jsonrpc":"2.0","id":1,"method":"data/reset"}`); code != -32000 || msg != "env-level data/reset requires exactly one backing server, found 2" {
		t.Fatalf("two servers → %d %q", code, msg)
	}
	zero := startGateway(t, &Config{}, nil)
	if code, msg := rpc(zero, `{"jsonrpc":"2.0","id":1,"method":"data/get"}`); code != -32000 || !strings.Contains(msg, "exactly one backing server, found 0") {
		t.Fatalf("zero servers → %d %q", code, msg)
	}
	_ = fmt.Sprint
}
