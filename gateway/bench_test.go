package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// benchClient is an mcp-go client with a connection pool large enough for
// the concurrency under test, so direct and gateway runs compare fairly.
func benchClient(b *testing.B, url string) *client.Client {
	b.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 128
	st, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(&http.Client{Transport: tr}), transport.WithHTTPLogger(quiet))
	if err != nil {
		b.Fatal(err)
	}
	c := client.NewClient(st)
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20251125}}); err != nil {
		b.Fatal(err)
	}
	return c
}

var benchID atomic.Int64

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchCall(b *testing.B, c *client.Client) {
	benchCallParams(b, c, map[string]any{"name": "items_echo", "arguments": map[string]any{"msg": "hello"}})
}

// benchCallMeta calls directly with the _meta the gateway stamps on its
// child calls: what the child has to parse per call
// through the gateway, without the hop.
func benchCallMeta(b *testing.B, c *client.Client) {
	benchCallParams(b, c, map[string]any{"name": "items_echo", "arguments": map[string]any{"msg": "hello"},
		"_meta": map[string]any{"agentenv.io/role": "default", "agentenv.io/session": "0123456789abcdef0123456789abcdef"}})
}

func benchCallParams(b *testing.B, c *client.Client, params map[string]any) {
	resp, err := c.GetTransport().SendRequest(context.Background(), transport.JSONRPCRequest{JSONRPC: "2.0",
		ID: mcp.NewRequestId(benchID.Add(1)), Method: "tools/call", Params: params})
	if err != nil || resp.Error != nil || !strings.Contains(string(resp.Result), "hello") {
		b.Errorf("call failed: %v %+v", err, resp)
	}
}

// tcpRelay listens on loopback and relays bytes both ways between each
// accepted connection and target, with plain read/write copies: the floor
// of "one more loopback hop" with no HTTP or MCP work at all.
func tcpRelay(b *testing.B, target string) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	r := &byteRelay{target: target}
	b.Cleanup(func() {
		ln.Close()
		r.close()
	})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.serve(ln)
	}()
	return "http://" + ln.Addr().String()
}

// byteRelay relays every connection accepted on a listener to target.
type byteRelay struct {
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	open   []net.Conn
}

// serve accepts until ln closes.
func (r *byteRelay) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		d, err := net.Dial("tcp", r.target)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		r.open = append(r.open, c, d)
		r.mu.Unlock()
		r.wg.Add(2)
		go func() { defer r.wg.Done(); copyAndClose(d, c) }()
		go func() { defer r.wg.Done(); copyAndClose(c, d) }()
	}
}

// close ends every relayed connection and waits for the copies to stop
// (after the listener was closed).
func (r *byteRelay) close() {
	r.mu.Lock()
	for _, c := range r.open {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// copyAndClose copies src to dst until either ends, then closes both.
// io.Copy between TCP connections would splice through a pipe, which costs
// more than it saves on messages this small.
func copyAndClose(dst, src net.Conn) {
	_, _ = io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, make([]byte, 32<<10))
	dst.Close()
	src.Close()
}

// runLoad runs b.N calls at the given concurrency and reports the median
// latency and throughput.
func runLoad(b *testing.B, conc int, call func()) {
	b.ReportAllocs()
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := processCPU()
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				call()
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	b.StopTimer()
	// CPU per call (client, gateway and child all run in this process) is
	// what bounds throughput on a saturated machine, and is much less
	// sensitive to other load than wall-clock figures.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/call")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
}

// BenchmarkToolsCall compares tools/call through the gateway with the
// same server called directly, at concurrency 1 and 32 (the gateway's
// targets: median ≤ 1.25× direct at c=1, throughput ≥ 75% at c=32).
func BenchmarkToolsCall(b *testing.B) {
	child := startChild(b, "items", &childOpts{tools: []server.ServerTool{benchEchoTool("items_echo")}})
	tg := startGateway(b, &Config{Servers: serversOf(child)}, nil)
	direct := benchClient(b, child.URL)
	via := benchClient(b, tg.URL+"/mcp")
	// the same gateway with its child calls on net/http's Transport (an
	// explicit HTTPClient disables the raw client), for comparison.
	opts := testOptions()
	ntr := http.DefaultTransport.(*http.Transport).Clone()
	ntr.MaxIdleConnsPerHost = 256
	opts.HTTPClient = &http.Client{Transport: ntr}
	tgNet := startGateway(b, &Config{Servers: serversOf(child)}, opts)
	viaNet := benchClient(b, tgNet.URL+"/mcp")
	// floor: a bare net/http reverse proxy in front of the same child, to
	// show what one extra HTTP hop costs by itself.
	target, _ := url.Parse(child.Base)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 128}
	floor := benchClient(b, newLoopbackServer(b, rp)+"/mcp")
	relay := benchClient(b, tcpRelay(b, target.Host)+"/mcp")
	for _, conc := range []int{1, 32} {
		for _, tc := range []struct {
			name string
			c    *client.Client
			call func(*testing.B, *client.Client)
		}{
			{"direct", direct, benchCall},
			{"direct-meta", direct, benchCallMeta},
			{"gateway", via, benchCall},
			{"gateway-nethttp", viaNet, benchCall},
			{"bare-proxy", floor, benchCall},
			{"tcp-relay", relay, benchCall},
		} {
			b.Run(tc.name+"/c"+itoa(conc), func(b *testing.B) {
				runLoad(b, conc, func() { tc.call(b, tc.c) })
			})
		}
	}
}

// BenchmarkStepVsMCP compares POST /step call_tool with tools/call over
// /mcp through the same gateway (target: /step no slower).
func BenchmarkStepVsMCP(b *testing.B) {
	child := startChild(b, "items", nil)
	tg := startGateway(b, &Config{Servers: serversOf(child)}, nil)
	via := benchClient(b, tg.URL+"/mcp")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 128
	hc := &http.Client{Transport: tr}
	body := `{"action":"call_tool","tool_name":"items_echo","arguments":{"msg":"hello"}}`
	b.Run("mcp/c1", func(b *testing.B) { runLoad(b, 1, func() { benchCall(b, via) }) })
	b.Run("step/c1", func(b *testing.B) {
		runLoad(b, 1, func() {
			resp, err := hc.Post(tg.URL+"/step", "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			var out map[string]json.RawMessage
			json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
			}
		})
	})
}

// BenchmarkSessionsMemory holds 1,000 initialized MCP sessions on one
// gateway and reports the heap they take (idle heap reported too).
func BenchmarkSessionsMemory(b *testing.B) {
	for i := 0; i < b.N; i++ {
		child := startChild(b, "items", nil)
		tg := startGateway(b, &Config{Servers: serversOf(child)}, nil)
		heap := func() uint64 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		idle := heap()
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 8
		hc := &http.Client{Transport: tr}
		for s := 0; s < 1000; s++ {
			req, _ := http.NewRequest("POST", tg.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"m","version":"0"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") == "" {
				b.Fatalf("initialize %d", resp.StatusCode)
			}
		}
		after := heap()
		b.ReportMetric(float64(idle)/(1<<20), "idle-heap-MB")
		b.ReportMetric(float64(after-idle)/1000/1024, "KB/session")
	}
}

// BenchmarkManySessions holds 4,096 MCP sessions open on one gateway and
// makes one tools/call on each, 64 at a time; it reports the share of calls
// that succeeded (target ≥ 99%).
func BenchmarkManySessions(b *testing.B) {
	const sessions = 4096
	for i := 0; i < b.N; i++ {
		child := startChild(b, "items", nil)
		tg := startGateway(b, &Config{Servers: serversOf(child)}, nil)
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		hc := &http.Client{Transport: tr}
		post := func(sid, body string) (*http.Response, error) {
			req, _ := http.NewRequest("POST", tg.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if sid != "" {
				req.Header.Set("Mcp-Session-Id", sid)
				req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			}
			return hc.Do(req)
		}
		ids := make([]string, sessions)
		var ok atomic.Int64
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for s := 0; s < sessions; s++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				resp, err := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"m","version":"0"}}}`)
				if err != nil {
					return
				}
				resp.Body.Close()
				ids[s] = resp.Header.Get("Mcp-Session-Id")
				if resp, err := post(ids[s], `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err == nil {
					resp.Body.Close()
				}
			}()
		}
		wg.Wait()
		for s := 0; s < sessions; s++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				resp, err := post(ids[s], `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"items_echo","arguments":{"s":1}}}`)
				if err != nil {
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 && strings.Contains(string(body), `{\"s\":1}`) {
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
		if n := len(tg.mcp.sessions.all()); n < sessions {
			b.Fatalf("only %d sessions held", n)
		}
		b.ReportMetric(100*float64(ok.Load())/sessions, "%ok")
	}
}
