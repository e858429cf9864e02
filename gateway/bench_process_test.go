package gateway

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// benchServeEnv names the server a re-executed test binary runs
// (BenchmarkToolsCallProcesses, BenchmarkSoak): "child", "gateway" or
// "relay", or "soak-load" for BenchmarkSoak's load generator.
const benchServeEnv = "AGENTENV_BENCH_SERVE"

func TestMain(m *testing.M) {
	if role := os.Getenv(benchServeEnv); role != "" {
		os.Exit(serveBenchProcess(role, os.Getenv("AGENTENV_BENCH_TARGET")))
	}
	os.Exit(m.Run())
}

// benchEchoTool is the echo tool without the test child's call
// recording, whose growing slice would tax the heap in long runs.
func benchEchoTool(name string) server.ServerTool {
	return server.ServerTool{
		Tool: mcp.NewToolWithRawSchema(name, "Echo the arguments.", json.RawMessage(`{"type":"object","properties":{"msg":{"type":"string"}}}`)),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(string(req.Params.RawArguments)), nil
		},
	}
}

// serveBenchProcess serves one benchmark server on loopback, prints
// "LISTEN <url>" and runs until its stdin closes, so it never outlives
// the benchmark that started it.
func serveBenchProcess(role, target string) int {
	if role == "soak-load" {
		return soakLoad(target)
	}
	addr := "127.0.0.1:0"
	if a := os.Getenv("AGENTENV_BENCH_ADDR"); a != "" {
		addr = a // a restarted server keeps its port
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	base := "http://" + ln.Addr().String()
	var h http.Handler
	switch role {
	case "child":
		name := cmp.Or(os.Getenv("AGENTENV_BENCH_NAME"), "items")
		srv := server.NewMCPServer(name, "1", server.WithToolCapabilities(true))
		// <name>_mark is the tool BenchmarkSoak's after-call trigger watches.
		srv.AddTools(benchEchoTool(name+"_echo"), benchEchoTool(name+"_mark"))
		h = server.NewStreamableHTTPServer(srv, server.WithStreamableHTTPProtocolVersions(supportedMCPVersions...),
			server.WithDisableLocalhostProtection(true), server.WithStreamableHTTPLogger(quiet), server.WithStateful(true))
		base += "/mcp"
	case "child-gosdk":
		h = sdkEchoHandler(cmp.Or(os.Getenv("AGENTENV_BENCH_NAME"), "items"))
		base += "/mcp"
	case "rproxy":
		// net/http's reverse proxy in front of target (a base URL).
		u, err := url.Parse(target)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		rp := httputil.NewSingleHostReverseProxy(u)
		rp.Transport = &http.Transport{MaxIdleConnsPerHost: 256}
		h = rp
		base += "/mcp"
	case "gateway":
		dir, err := os.MkdirTemp("", "agentenv-bench-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		g, err := New(&Config{Servers: []Server{{Name: "items", URL: target}}, TrajectoryFile: dir + "/trajectory.jsonl"}, testOptions())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer g.Close()
		g.Start()
		// The benchmarks read the process's memory split from here.
		mux := http.NewServeMux()
		mux.Handle("/", g.Handler())
		mux.HandleFunc("GET /_bench/memstats", func(w http.ResponseWriter, r *http.Request) {
			runtime.GC() // live heap, not what the next collection frees
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			fmt.Fprintf(w, `{"heap":%d,"stack":%d,"goroutines":%d}`, m.HeapInuse, m.StackInuse, runtime.NumGoroutine())
		})
		mux.HandleFunc("GET /_bench/heap", func(w http.ResponseWriter, r *http.Request) {
			runtime.GC()
			_ = pprof.Lookup("heap").WriteTo(w, 0)
		})
		h = mux
		base += "/mcp"
	case "relay":
		r := &byteRelay{target: target}
		go r.serve(ln)
		defer r.close()
		fmt.Println("LISTEN " + base + "/mcp")
		_, _ = bufio.NewReader(os.Stdin).ReadString(0)
		ln.Close()
		return 0
	default:
		fmt.Fprintln(os.Stderr, "unknown role", role)
		return 2
	}
	if path := os.Getenv("AGENTENV_BENCH_CPUPROFILE"); path != "" && role == "gateway" {
		// To see where the gateway process spends its time.
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	fmt.Println("LISTEN " + base)
	_, _ = bufio.NewReader(os.Stdin).ReadString(0) // until the parent closes stdin
	hs.Close()
	return 0
}

// benchProcess is a server running in its own process.
type benchProcess struct {
	cmd *exec.Cmd
	URL string
}

func startBenchProcess(b testing.TB, role, target string, env ...string) *benchProcess {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServeEnv+"="+role, "AGENTENV_BENCH_TARGET="+target)
	cmd.Env = append(cmd.Env, env...)
	return runBenchProcess(b, role, cmd)
}

// runBenchProcess starts cmd, a server that prints "LISTEN <url>" and
// serves until its stdin closes, and stops it when the benchmark ends.
func runBenchProcess(b testing.TB, role string, cmd *exec.Cmd) *benchProcess {
	b.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if cmd.ProcessState != nil {
			return // the test stopped it itself
		}
		stdin.Close() // the process exits when its stdin closes
		if err := cmd.Wait(); err != nil {
			b.Errorf("%s process: %v", role, err)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTEN ")
	if err != nil || !ok {
		b.Fatalf("%s process did not start: %q %v", role, line, err)
	}
	p := &benchProcess{cmd: cmd, URL: u}
	if role == "gateway" {
		waitFor(b, "gateway ready", func() bool {
			resp, err := http.Get(strings.TrimSuffix(u, "/mcp") + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	}
	return p
}

// cpu is the process's user + system CPU so far (/proc/<pid>/stat).
func (p *benchProcess) cpu(b *testing.B) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the line, in clock ticks (USER_HZ = 100).
	rest := string(raw[strings.LastIndexByte(string(raw), ')')+2:])
	f := strings.Fields(rest)
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// BenchmarkToolsCallProcesses is BenchmarkToolsCall in the deployed
// shape: the child, the gateway and the byte relay each run in their own
// process (as containers would), so each has its own heap and GC, and the
// client in this one. cpu-µs/call sums every process involved.
func BenchmarkToolsCallProcesses(b *testing.B) {
	child := startBenchProcess(b, "child", "")
	gw := startBenchProcess(b, "gateway", child.URL)
	cu, _ := url.Parse(child.URL)
	relay := startBenchProcess(b, "relay", cu.Host)
	direct := benchClient(b, child.URL)
	via := benchClient(b, gw.URL)
	relayed := benchClient(b, relay.URL)
	for _, conc := range []int{1, 32} {
		for _, tc := range []struct {
			name  string
			c     *client.Client
			call  func(*testing.B, *client.Client)
			procs []*benchProcess
		}{
			{"direct", direct, benchCall, []*benchProcess{child}},
			{"direct-meta", direct, benchCallMeta, []*benchProcess{child}},
			{"gateway", via, benchCall, []*benchProcess{child, gw}},
			{"tcp-relay", relayed, benchCall, []*benchProcess{child, relay}},
		} {
			b.Run(tc.name+"/c"+itoa(conc), func(b *testing.B) {
				var before time.Duration
				for _, p := range tc.procs {
					before += p.cpu(b)
				}
				runLoad(b, conc, func() { tc.call(b, tc.c) })
				var after time.Duration
				for _, p := range tc.procs {
					after += p.cpu(b)
				}
				b.ReportMetric(float64((after-before).Microseconds())/float64(b.N), "server-cpu-µs/call")
			})
		}
	}
}
