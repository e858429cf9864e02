package gateway

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMatrix calls one echo tool through every contestant in front of
// every child kind, interleaved in one run so every figure sees the same
// machine, and prints the table docs/benchmarks.md records. Each round
// runs, for every child and contestant in turn, a batch of calls at
// concurrency 1 (latency) and one at concurrency 32 (throughput).
//
// Children, each in its own process: the official go-sdk (answers as
// event streams), mcp-go (answers JSON) and a standard-library Python
// server (testdata/bench/child.py; event streams in chunked encoding).
// Contestants: the child called directly; the gateway; net/http's reverse
// proxy; a TCP relay that copies bytes (the floor of one more hop), each
// in its own process whose CPU is read from /proc. The client is the
// official go-sdk's, in this process.
//
// The goals are ratios to the relay in the same run; the benchmark
// reports them and fails only when calls fail. It runs once whatever b.N:
//
//	go test -run '^$' -bench BenchmarkMatrix -benchtime 1x ./gateway
//
// AGENTENV_MATRIX_CHILDREN (a comma-separated subset of go-sdk, mcp-go,
// python), AGENTENV_MATRIX_ROUNDS (default 5), AGENTENV_MATRIX_C1 (calls per c=1
// batch, default 200) and AGENTENV_MATRIX_C32 (per c=32 batch, default
// 2000) size the run. AGENTENV_MATRIX_CONTESTANTS (a comma-separated subset
// of direct, gateway, httputil; the relay always runs, the ratios need it)
// narrows it, e.g. to profile the gateway alone
// (AGENTENV_BENCH_CPUPROFILE=<file> writes the gateway process's profile).
// AGENTENV_MATRIX_BASELINE names another build of this test binary
// (go test -c on the revision to compare with): its gateway runs as the
// contestant gateway-base, interleaved with this one, so a change's effect
// on CPU per call is read from one run.
func BenchmarkMatrix(b *testing.B) {
	rounds := envInt("AGENTENV_MATRIX_ROUNDS", 5)
	c1 := envInt("AGENTENV_MATRIX_C1", 200)
	c32 := envInt("AGENTENV_MATRIX_C32", 2000)
	load0 := loadAvg()
	wanted := func(contestant string) bool {
		only := os.Getenv("AGENTENV_MATRIX_CONTESTANTS")
		return only == "" || slices.Contains(strings.Split(only, ","), contestant)
	}

	type contestant struct {
		name   string
		cs     *sdk.ClientSession
		middle *benchProcess // nil when called directly
	}
	type kind struct {
		name        string
		contestants []contestant
	}
	var kinds []kind
	for _, k := range []struct {
		name  string
		start func() *benchProcess
	}{
		{"go-sdk", func() *benchProcess { return startBenchProcess(b, "child-gosdk", "") }},
		{"mcp-go", func() *benchProcess { return startBenchProcess(b, "child", "") }},
		{"python", func() *benchProcess {
			if _, err := exec.LookPath("python3"); err != nil {
				return nil
			}
			return runBenchProcess(b, "child-python", exec.Command("python3", "testdata/bench/child.py"))
		}},
	} {
		if only := os.Getenv("AGENTENV_MATRIX_CHILDREN"); only != "" && !slices.Contains(strings.Split(only, ","), k.name) {
			continue
		}
		child := k.start()
		if child == nil {
			fmt.Printf("child %s: skipped (no python3 on PATH)\n", k.name)
			continue
		}
		cu, _ := url.Parse(child.URL)
		gw := startBenchProcess(b, "gateway", child.URL)
		relay := startBenchProcess(b, "relay", cu.Host)
		cts := []contestant{}
		if wanted("direct") {
			cts = append(cts, contestant{"direct", sdkBenchSession(b, child.URL), nil})
		}
		if wanted("gateway") {
			cts = append(cts, contestant{"gateway", sdkBenchSession(b, gw.URL), gw})
		}
		if base := os.Getenv("AGENTENV_MATRIX_BASELINE"); base != "" {
			cmd := exec.Command(base, "-test.run=^$")
			cmd.Env = append(os.Environ(), benchServeEnv+"=gateway", "AGENTENV_BENCH_TARGET="+child.URL, "AGENTENV_BENCH_CPUPROFILE=")
			bgw := runBenchProcess(b, "gateway", cmd)
			cts = append(cts, contestant{"gateway-base", sdkBenchSession(b, bgw.URL), bgw})
		}
		if wanted("httputil") {
			rp := startBenchProcess(b, "rproxy", "http://"+cu.Host)
			cts = append(cts, contestant{"httputil", sdkBenchSession(b, rp.URL), rp})
		}
		cts = append(cts, contestant{"tcp-relay", sdkBenchSession(b, relay.URL), relay})
		kinds = append(kinds, kind{k.name, cts})
	}
	fmt.Println("tbxark/mcp-proxy: skipped (its module is not available from the module proxy)")

	type cell struct {
		lat1      []time.Duration
		calls32   int
		elapsed32 time.Duration
		cpu       time.Duration // the middle process's, over every call
		calls     int
		failed    int
	}
	cells := map[string]*cell{}
	b.ResetTimer()
	for r := range rounds {
		for _, k := range kinds {
			// Rotate the order so no contestant always runs first.
			for i := range k.contestants {
				ct := k.contestants[(i+r)%len(k.contestants)]
				c := cells[k.name+"/"+ct.name]
				if c == nil {
					c = &cell{}
					cells[k.name+"/"+ct.name] = c
				}
				var cpu0 time.Duration
				if ct.middle != nil {
					cpu0 = ct.middle.cpu(b)
				}
				lat, _, f1 := sdkBatch(b, k.name+"/"+ct.name, ct.cs, 1, c1)
				c.lat1 = append(c.lat1, lat...)
				_, el, f32 := sdkBatch(b, k.name+"/"+ct.name, ct.cs, 32, c32)
				c.failed += f1 + f32
				c.calls32 += c32
				c.elapsed32 += el
				if ct.middle != nil {
					c.cpu += ct.middle.cpu(b) - cpu0
				}
				c.calls += c1 + c32
			}
		}
	}
	b.StopTimer()

	for _, c := range cells {
		slices.Sort(c.lat1)
	}
	q := func(d []time.Duration, p float64) time.Duration { return d[int(p*float64(len(d)-1))] }
	fmt.Printf("\nload average %s at the start, %s at the end; %d rounds of %d calls at c=1 and %d at c=32 per cell\n\n",
		load0, loadAvg(), rounds, c1, c32)
	fmt.Println("| child | contestant | c=1 p50 µs | c=1 p99 µs | p50 × relay | c=32 calls/s | × relay | middle CPU µs/call | × relay | failed calls |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	worst := map[string]float64{"tput": math.Inf(1)}
	var notes []string // the baseline comparison, printed after the table
	for _, k := range kinds {
		relay := cells[k.name+"/tcp-relay"]
		rp50 := q(relay.lat1, 0.5)
		rtput := float64(relay.calls32) / relay.elapsed32.Seconds()
		rcpu := float64(relay.cpu.Microseconds()) / float64(relay.calls)
		for _, ct := range k.contestants {
			c := cells[k.name+"/"+ct.name]
			p50 := q(c.lat1, 0.5)
			tput := float64(c.calls32) / c.elapsed32.Seconds()
			cpu, cpuRatio := "–", "–"
			if ct.middle != nil {
				perCall := float64(c.cpu.Microseconds()) / float64(c.calls)
				cpu, cpuRatio = fmt.Sprintf("%.0f", perCall), fmt.Sprintf("%.2f", perCall/rcpu)
				if ct.name == "gateway" {
					worst["cpu"] = max(worst["cpu"], perCall/rcpu)
				}
				if ct.name == "gateway-base" {
					if gc := cells[k.name+"/gateway"]; gc != nil {
						notes = append(notes, fmt.Sprintf("%s: gateway CPU per call %.0f µs vs the baseline's %.0f µs: %.2f×", k.name,
							float64(gc.cpu.Microseconds())/float64(gc.calls), perCall, float64(gc.cpu.Microseconds())/float64(gc.calls)/perCall))
					}
				}
			}
			fmt.Printf("| %s | %s | %d | %d | %.2f | %.0f | %.2f | %s | %s | %d |\n", k.name, ct.name,
				p50.Microseconds(), q(c.lat1, 0.99).Microseconds(), float64(p50)/float64(rp50), tput, tput/rtput, cpu, cpuRatio, c.failed)
			if ct.name == "gateway" {
				worst["p50"] = max(worst["p50"], float64(p50)/float64(rp50))
				worst["tput"] = min(worst["tput"], tput/rtput)
				if hp := cells[k.name+"/httputil"]; hp != nil {
					worst["vs-httputil"] = max(worst["vs-httputil"], float64(p50)/float64(q(hp.lat1, 0.5)))
				}
			}
		}
	}
	fmt.Println()
	for _, n := range notes {
		fmt.Println(n)
	}
	goal := func(name string, ok bool, format string, args ...any) {
		verdict := "met"
		if !ok {
			verdict = "NOT met"
		}
		fmt.Printf("goal %s: %s (%s)\n", name, verdict, fmt.Sprintf(format, args...))
	}
	goal("c=1 p50 ≤ 1.45× relay", worst["p50"] <= 1.45, "worst child %.2f×", worst["p50"])
	goal("c=32 throughput ≥ 85% of relay", worst["tput"] >= 0.85, "worst child %.0f%%", 100*worst["tput"])
	goal("middle CPU/call ≤ 2.5× relay", worst["cpu"] <= 2.5, "worst child %.2f×", worst["cpu"])
	goal("c=1 p50 below httputil's", worst["vs-httputil"] < 1, "worst child %.2f× httputil's", worst["vs-httputil"])
	b.ReportMetric(worst["p50"], "gw-p50/relay")
	b.ReportMetric(worst["tput"], "gw-tput/relay")
	b.ReportMetric(worst["cpu"], "gw-cpu/relay")
}

// sdkBenchSession connects the official go-sdk client to url, with a
// connection pool as large as the concurrency under test.
func sdkBenchSession(b *testing.B, url string) *sdk.ClientSession {
	b.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		b.Fatalf("connect %s: %v", url, err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// sdkBatch makes calls tool calls (on the cell named) at concurrency conc
// and returns each call's latency, the batch's wall time and how many
// calls failed (the first failure is reported).
func sdkBatch(b *testing.B, cell string, cs *sdk.ClientSession, conc, calls int) ([]time.Duration, time.Duration, int) {
	lat := make([]time.Duration, calls)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Int64
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(calls) {
					return
				}
				t0 := time.Now()
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "items_echo", Arguments: map[string]any{"msg": "hello"}})
				lat[i] = time.Since(t0)
				if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "hello") {
					// A call failing through the gateway fails the benchmark;
					// one failing elsewhere is the peer's and is counted.
					if failed.Add(1) == 1 {
						report := b.Logf
						if strings.HasSuffix(cell, "/gateway") {
							report = b.Errorf
						}
						report("%s, c=%d: call failed: %v %+v", cell, conc, err, res)
					}
				}
			}
		})
	}
	wg.Wait()
	return lat, time.Since(start), int(failed.Load())
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// loadAvg is the 1-minute load average, as /proc/loadavg shows it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}
