package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkHeldSessions opens AGENTENV_SESSIONS (default 16,384) MCP
// sessions on one gateway process, each with the standing GET stream the
// official go-sdk client keeps open, then makes one tools/call on every
// session while all are held. It reports the gateway process's resident
// memory per held session and the share of sessions that initialized,
// opened their stream and answered their call (target 100%). It is heavy
// (two connections per session) and not part of the test run:
//
//	go test -run '^$' -bench BenchmarkHeldSessions -benchtime 1x ./gateway
//
// AGENTENV_BENCH_HEAPPROFILE=<file> saves the gateway's heap profile while
// every session is held.
func BenchmarkHeldSessions(b *testing.B) {
	n := envInt("AGENTENV_SESSIONS", 16384)
	child := startBenchProcess(b, "child", "")
	gw := startBenchProcess(b, "gateway", child.URL)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	hc := &http.Client{Transport: tr}
	post := func(sid, body string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, gw.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		return hc.Do(req)
	}
	// each runs f for every session, 64 at a time.
	each := func(f func(i int) bool) int {
		var ok atomic.Int64
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for i := range n {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if f(i) {
					ok.Add(1)
				}
			})
		}
		wg.Wait()
		return int(ok.Load())
	}
	// Warm the gateway (its child session, pools) before the baseline.
	if resp, err := post("", initializeBody); err == nil {
		resp.Body.Close()
	}
	rss0, ms0 := gw.rss(b), gw.memstats(b)
	ids := make([]string, n)
	streams := make([]*http.Response, n)
	defer func() {
		for _, s := range streams {
			if s != nil {
				s.Body.Close()
			}
		}
	}()
	opened := each(func(i int) bool {
		resp, err := post("", initializeBody)
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ids[i] = resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || ids[i] == "" {
			return false
		}
		if resp, err := post(ids[i], `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err == nil {
			resp.Body.Close()
		}
		req, _ := http.NewRequest(http.MethodGet, gw.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", ids[i])
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		s, err := hc.Do(req)
		if err != nil {
			return false
		}
		streams[i] = s
		return s.StatusCode == http.StatusOK
	})
	rss1, ms1 := gw.rss(b), gw.memstats(b)
	if path := os.Getenv("AGENTENV_BENCH_HEAPPROFILE"); path != "" {
		// Where the held sessions' heap goes (go tool pprof -top).
		gw.heapProfile(b, path)
	}
	answered := each(func(i int) bool {
		if ids[i] == "" {
			return false
		}
		resp, err := post(ids[i], `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"items_echo","arguments":{"msg":"hello"}}}`)
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && strings.Contains(string(body), "hello")
	})
	rss2 := gw.rss(b)
	fmt.Printf("%d sessions (load average %s): %d opened with their GET stream, %d answered a call; gateway RSS %d MB idle, %d MB held, %d MB after the calls: %.1f KB per held session\n",
		n, loadAvg(), opened, answered, rss0>>20, rss1>>20, rss2>>20, float64(rss1-rss0)/float64(n)/1024)
	fmt.Printf("per held session: live heap %.1f KB, goroutine stacks %.1f KB, %.2f goroutines\n",
		float64(ms1.Heap-ms0.Heap)/float64(n)/1024, float64(ms1.Stack-ms0.Stack)/float64(n)/1024, float64(ms1.Goroutines-ms0.Goroutines)/float64(n))
	b.ReportMetric(float64(rss1-rss0)/float64(n)/1024, "KB/session")
	b.ReportMetric(100*float64(min(opened, answered))/float64(n), "%ok")
	if opened != n || answered != n {
		b.Errorf("%d of %d sessions opened, %d answered", opened, n, answered)
	}
}

// heapProfile saves a heap profile of a gateway benchmark process.
func (p *benchProcess) heapProfile(b *testing.B, path string) {
	resp, err := http.Get(strings.TrimSuffix(p.URL, "/mcp") + "/_bench/heap")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Fatal(err)
	}
}

// rss is the process's resident set size in bytes (/proc/<pid>/status).
func (p *benchProcess) rss(b *testing.B) uint64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// goMemory is what the gateway process's runtime says of its memory.
type goMemory struct {
	Heap, Stack uint64
	Goroutines  int
}

// memstats asks a gateway benchmark process for its runtime's figures.
func (p *benchProcess) memstats(b *testing.B) goMemory {
	resp, err := http.Get(strings.TrimSuffix(p.URL, "/mcp") + "/_bench/memstats")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var m goMemory
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		b.Fatal(err)
	}
	return m
}
