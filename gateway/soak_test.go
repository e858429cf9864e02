package gateway

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// soakEnv enables BenchmarkSoak: "short" is 2 minutes with the flaky
// child killed every 30 s, "1" or "full" is 20 minutes killed every
// minute, and any Go duration ("45m") is that long, killed every minute
// (every quarter of the run when that is shorter).
const soakEnv = "AGENTENV_SOAK"

// soakAbandonEnv is the percentage of sessions the load generator walks
// away from without DELETE in the measured run (10 when unset; the
// warm-up abandons none), so a run can tell abandoned sessions' memory
// apart from any other growth.
const soakAbandonEnv = "AGENTENV_SOAK_ABANDON"

// Variables of the re-executed load generator (role "soak-load").
const (
	soakForEnv  = "AGENTENV_SOAK_FOR"
	soakConcEnv = "AGENTENV_SOAK_CONC"
)

// soakPlan is one soak run's shape.
type soakPlan struct {
	run       time.Duration // the measured load
	warm      time.Duration // load before the start figures are taken
	killEvery time.Duration // the flaky child is SIGKILLed this often
	down      time.Duration // and restarted on its port this much later
	grace     time.Duration // after a restart, errors are still the outage's
	conc      int
	abandon   int           // percent of the measured run's sessions left without DELETE
	settle    time.Duration // deadline for goroutines and sessions to return to the start
}

func soakPlanFromEnv(v, abandon string) (soakPlan, error) {
	p := soakPlan{warm: 30 * time.Second, killEvery: time.Minute, down: 3 * time.Second,
		grace: 5 * time.Second, conc: 32, abandon: 10, settle: 3 * time.Minute}
	if abandon != "" {
		n, err := strconv.Atoi(abandon)
		if err != nil || n < 0 || n > 100 {
			return p, fmt.Errorf("%s must be a percentage 0-100, got %q", soakAbandonEnv, abandon)
		}
		p.abandon = n
	}
	switch v {
	case "short":
		p.run, p.killEvery, p.warm = 2*time.Minute, 30*time.Second, 15*time.Second
		return p, nil
	case "1", "full":
		p.run = 20 * time.Minute
		return p, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return p, fmt.Errorf("%s must be short, full or a positive duration, got %q", soakEnv, v)
	}
	p.run = d
	p.killEvery = min(p.killEvery, d/4)
	p.warm = min(p.warm, d/4)
	return p, nil
}

// BenchmarkSoak runs mixed traffic through one gateway for a long time
// while one of its children is killed and restarted, and checks that
// nothing accumulates: the gateway's RSS grows under 10 % from the end of
// warm-up to the end of the run, its goroutine count returns to where it
// started, and every failed call overlapped a window in which the child
// was down (plus a short grace for the reopen). Latency and throughput
// are reported, never asserted. Skipped unless AGENTENV_SOAK is set:
//
//	AGENTENV_SOAK=short go test -run '^$' -bench Soak -benchtime 1x -timeout 30m ./gateway/
//	AGENTENV_SOAK=20m   go test -run '^$' -bench Soak -benchtime 1x -timeout 60m ./gateway/
//
// Shape: the gateway runs in this process on a real loopback listener
// (served by Gateway.Run, configured by ConfigFromEnv, so GATEWAY_*
// variables set around the run apply), so runtime.NumGoroutine and
// /proc/self are the gateway's plus a constant harness; the load
// generator and both children are this test binary re-executed as
// separate processes. The load: 32 workers, each a stream of MCP sessions
// (initialize with a fixed AgentEnv-Role, 20-200 operations, then DELETE,
// or for one session in ten, abandoned (AGENTENV_SOAK_ABANDON percent);
// one in four holds a GET stream open) mixing tools/call over /mcp on both children, /step call_tool,
// calls that fire an after-call trigger with a barrier, get_time and
// tools/list, while a time trigger on the virtual clock (60× real time)
// fires every 5 virtual seconds.
func BenchmarkSoak(b *testing.B) {
	v := os.Getenv(soakEnv)
	if v == "" {
		b.Skip("set " + soakEnv + "=short (2 min) or =20m to run the soak")
	}
	plan, err := soakPlanFromEnv(v, os.Getenv(soakAbandonEnv))
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		runSoak(b, plan)
	}
}

// soakWindow is a span in which the flaky child was down.
type soakWindow struct{ down, up time.Time }

// soakFigures are the gateway process's figures at one moment.
type soakFigures struct {
	goroutines int
	rss, heap  uint64
}

func runSoak(b *testing.B, plan soakPlan) {
	keep, err := os.MkdirTemp("", "agentenv-soak-")
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("profiles in %s (removed when the run passes)", keep)

	stable := startBenchProcess(b, "child", "")
	flaky := &soakChild{addr: freeLoopbackAddr(b)}
	if err := flaky.start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(flaky.stop)
	g, ctl := startSoakGateway(b, "items="+stable.URL+",flaky=http://"+flaky.addr+"/mcp")

	// Warm-up: the same mix, no kills, so pools, caches and the heap reach
	// their working size before the start figures are taken.
	if _, _, err := runSoakLoad(ctl.base, plan.warm, plan.conc, 0); err != nil {
		b.Fatal(err)
	}
	// Idle keep-alive connections of the gateway's net/http pool (child
	// sessions' initialize, card fetches) each hold two goroutines until
	// their 90 s idle timeout; the pool is bounded, so both figures are
	// taken without them.
	g.httpc.CloseIdleConnections()
	before := soakFigures{goroutines: settledGoroutines(2 * time.Second)}
	before.rss, before.heap = soakMemory()
	writeProfile(b, "goroutine", keep+"/start.txt")
	writeProfile(b, "heap", keep+"/start-heap.pb.gz")

	// The measured run, with the flaky child killed and restarted. Kills
	// stop half a period before the load does, so the last outage meets
	// traffic too (a gateway learns of a restarted child from its next
	// call; with none, the end figures would catch it mid-way).
	killCtx, stopKills := context.WithTimeout(context.Background(), plan.run-plan.killEvery/2)
	var windows []soakWindow
	killed := make(chan error, 1)
	go func() {
		ws, err := flaky.cycle(killCtx, plan.killEvery, plan.down)
		windows = ws
		killed <- err
	}()
	start := time.Now()
	res, errs, err := runSoakLoad(ctl.base, plan.run, plan.conc, plan.abandon)
	elapsed := time.Since(start)
	stopKills()
	kerr := <-killed
	if err != nil {
		b.Fatal(err)
	}
	if kerr != nil {
		b.Fatalf("flaky child: %v", kerr)
	}

	// The end: sessions were closed or abandoned and the load process is
	// gone; goroutines get plan.settle to come back to the start count,
	// and abandoned sessions to expire (the warm-up left none).
	stopped := len(g.mcp.sessions.all())
	after := soakFigures{goroutines: runtime.NumGoroutine()}
	held := stopped
	for deadline := time.Now().Add(plan.settle); (after.goroutines != before.goroutines || held > 0) && time.Now().Before(deadline); {
		g.httpc.CloseIdleConnections()
		after.goroutines = settledGoroutines(time.Second)
		held = len(g.mcp.sessions.all())
	}
	after.rss, after.heap = soakMemory()
	// Only now: the answer (the trigger event log, megabytes) would count.
	var state struct {
		Triggers []struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			FireCount    int    `json:"fire_count"`
			FailureCount int    `json:"failure_count"`
		} `json:"triggers"`
	}
	if err := json.Unmarshal(ctl.must(b, "GET", "/triggers/state", ""), &state); err != nil {
		b.Fatal(err)
	}
	ctl.hc.CloseIdleConnections()
	var notes []string
	for _, c := range g.children {
		c.mu.Lock()
		notes = append(notes, fmt.Sprintf("%s sessions opened %d (one open now: %v)", c.server.Name, c.opened, c.gen != nil))
		c.mu.Unlock()
	}
	for _, t := range state.Triggers {
		notes = append(notes, fmt.Sprintf("%s fired %d, failed %d, %s", t.ID, t.FireCount, t.FailureCount, t.Status))
		b.ReportMetric(float64(t.FireCount), "fires-"+t.ID)
		if t.FireCount == 0 || t.FailureCount > 0 {
			b.Errorf("trigger %s fired %d times, failed %d", t.ID, t.FireCount, t.FailureCount)
		}
	}
	if len(state.Triggers) != 2 {
		b.Errorf("triggers at the end: %+v", state.Triggers)
	}
	b.ReportMetric(float64(res.Sessions), "sessions")
	b.ReportMetric(float64(res.Abandoned), "sessions-abandoned")
	b.ReportMetric(float64(stopped), "sessions-held-at-stop")
	b.ReportMetric(float64(held), "sessions-held-at-end")
	b.Logf("soak %s at c=%d: sessions %d (%d abandoned; held by the gateway: %d when the load stopped, %d at the end); %s",
		elapsed.Round(time.Second), plan.conc, res.Sessions, res.Abandoned, stopped, held, strings.Join(notes, ", "))

	reportSoakLoad(b, res, elapsed)
	outside := classifySoakErrors(b, errs, windows, plan.grace)
	for i, e := range outside {
		if i == 10 {
			b.Errorf("... and %d more errors outside downtime", len(outside)-10)
			break
		}
		b.Errorf("error outside downtime: %s %s after start: %s", e.Kind, time.Unix(0, e.Start).Sub(start).Round(time.Millisecond), e.Msg)
	}
	checkSoakFigures(b, before, after, keep, plan.settle)
	if !b.Failed() {
		os.RemoveAll(keep)
	}
}

// startSoakGateway serves a gateway for servers (INTERNAL_MCP_SERVERS) on
// a loopback port with Gateway.Run, configured by ConfigFromEnv so the
// caller's GATEWAY_* variables apply, then arms the virtual clock and
// registers the two triggers through the control routes.
func startSoakGateway(b *testing.B, servers string) (*Gateway, *soakControl) {
	const token = "soak-control-token"
	// Set unless the caller's environment sets them: abandoned sessions
	// must expire within the run for the end figures to mean anything, and
	// the 30 min default would outlast a 20 min soak.
	defaults := map[string]string{"GATEWAY_SESSION_IDLE_TIMEOUT_S": "30"}
	layered := map[string]string{
		"INTERNAL_MCP_SERVERS":    servers,
		"GATEWAY_CONTROL_TOKEN":   token,
		"GATEWAY_TRAJECTORY_FILE": b.TempDir() + "/trajectory.jsonl",
	}
	cfg, err := ConfigFromEnv(func(k string) string {
		if v, ok := layered[k]; ok {
			return v
		}
		return cmp.Or(os.Getenv(k), defaults[k])
	})
	if err != nil {
		b.Fatal(err)
	}
	g, err := New(cfg, &Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- g.Run(ctx, ln) }()
	b.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			b.Errorf("gateway Run: %v", err)
		}
	})
	ctl := &soakControl{base: "http://" + ln.Addr().String(), token: token, hc: &http.Client{Transport: &http.Transport{}}}
	waitFor(b, "gateway ready", func() bool { return ctl.status("GET", "/readyz", "") == http.StatusOK })
	// Both actions call the stable child: a time trigger's failure is
	// terminal, so one aimed at the flaky child would stop at the first kill.
	ctl.must(b, "PUT", "/clock/set-time", `{"virtual_time":"2026-03-01T09:00:00Z","virtual_seconds_per_real_second":60}`)
	ctl.must(b, "POST", "/triggers/register", `{"watch_roles":["default","agent"],"triggers":[
	  {"id":"after-mark","when":{"type":"action","tool":"items_mark","repeat":true},
	   "barrier":{"at":"provoking_call","timeout_seconds":10},
	   "actions":[{"type":"tool","tool":"items_echo","args":{"msg":"${args.msg}"},"as":"system"}]},
	  {"id":"tick","when":{"type":"time","every":"PT5S"},
	   "actions":[{"type":"tool","tool":"items_echo","args":{"msg":"tick"},"as":"system"}]}]}`)
	ctl.hc.CloseIdleConnections() // their server-side goroutines would count
	return g, ctl
}

// reportSoakLoad reports the load generator's figures (never asserted).
func reportSoakLoad(b *testing.B, res *soakResult, elapsed time.Duration) {
	var calls, failed int64
	for _, k := range res.Kinds {
		calls += k.Calls
		failed += k.Errors
		b.ReportMetric(float64(k.P50), k.Name+"-p50-µs")
		b.ReportMetric(float64(k.P99), k.Name+"-p99-µs")
		b.Logf("  %-10s %9d calls %6d errors  p50 %6d µs  p99 %7d µs", k.Name, k.Calls, k.Errors, k.P50, k.P99)
	}
	b.ReportMetric(float64(calls), "calls")
	b.ReportMetric(float64(calls)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(failed), "errors")
	b.Logf("%d calls (%.0f/s), %d errors", calls, float64(calls)/elapsed.Seconds(), failed)
}

// classifySoakErrors logs the commonest errors and returns those that
// overlapped no downtime window (extended by grace).
func classifySoakErrors(b *testing.B, errs []soakError, windows []soakWindow, grace time.Duration) []soakError {
	var outside []soakError
	kinds := map[string]int{} // by operation and the start of the message
	for _, e := range errs {
		if !e.during(windows, grace) {
			outside = append(outside, e)
		}
		kinds[e.Kind+": "+soakDigits.ReplaceAllString(e.Msg[:min(len(e.Msg), 120)], "N")]++
	}
	b.ReportMetric(float64(len(outside)), "errors-outside-downtime")
	b.ReportMetric(float64(len(windows)), "kills")
	b.Logf("%d errors, %d of them outside the %d downtime windows (+ %s grace); commonest:", len(errs), len(outside), len(windows), grace)
	for _, k := range slices.SortedFunc(maps.Keys(kinds), func(x, y string) int { return kinds[y] - kinds[x] })[:min(len(kinds), 8)] {
		b.Logf("  %5d × %s", kinds[k], k)
	}
	return outside
}

// soakDigits are replaced in error messages so that errors differing only
// by an id or a port are counted together.
var soakDigits = regexp.MustCompile(`[0-9]+`)

// checkSoakFigures reports the gateway's figures and fails the run on RSS
// growth of 10 % or more, or goroutines that did not come back, leaving
// profiles in keep.
func checkSoakFigures(b *testing.B, before, after soakFigures, keep string, settle time.Duration) {
	mb := func(n uint64) float64 { return float64(n) / (1 << 20) }
	growth := 100 * (float64(after.rss) - float64(before.rss)) / float64(before.rss)
	b.ReportMetric(mb(before.rss), "rss-start-MB")
	b.ReportMetric(mb(after.rss), "rss-end-MB")
	b.ReportMetric(growth, "rss-growth-%")
	b.ReportMetric(mb(before.heap), "heap-start-MB")
	b.ReportMetric(mb(after.heap), "heap-end-MB")
	b.ReportMetric(float64(before.goroutines), "goroutines-start")
	b.ReportMetric(float64(after.goroutines), "goroutines-end")
	b.Logf("RSS %.1f → %.1f MB (%+.1f %%), heap in use %.1f → %.1f MB, goroutines %d → %d",
		mb(before.rss), mb(after.rss), growth, mb(before.heap), mb(after.heap), before.goroutines, after.goroutines)
	if growth >= 10 {
		writeProfile(b, "heap", keep+"/end-heap.pb.gz")
		b.Errorf("gateway RSS grew %.1f %% (%.1f → %.1f MB), limit 10 %%; heap profiles: go tool pprof -top -diff_base %s/start-heap.pb.gz %s/end-heap.pb.gz",
			growth, mb(before.rss), mb(after.rss), keep, keep)
	}
	if after.goroutines != before.goroutines {
		writeProfile(b, "goroutine", keep+"/end.txt")
		b.Errorf("goroutines %d at the end, %d at the start (after %s); profiles: %s/start.txt, %s/end.txt",
			after.goroutines, before.goroutines, settle, keep, keep)
	}
}

// soakControl calls the gateway's control routes with the bearer token.
type soakControl struct {
	base, token string
	hc          *http.Client
}

func (c *soakControl) do(method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

func (c *soakControl) status(method, path, body string) int {
	st, _, _ := c.do(method, path, body)
	return st
}

func (c *soakControl) must(b *testing.B, method, path, body string) []byte {
	b.Helper()
	st, out, err := c.do(method, path, body)
	if err != nil || st != http.StatusOK {
		b.Fatalf("%s %s = %d %s %v", method, path, st, out, err)
	}
	return out
}

// settledGoroutines samples the goroutine count for a while and returns
// the lowest, so a goroutine that only lives for one trigger fire or one
// timer does not count.
func settledGoroutines(over time.Duration) int {
	n := runtime.NumGoroutine()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(over); time.Now().Before(end); {
		<-tick.C
		n = min(n, runtime.NumGoroutine())
	}
	return n
}

// soakMemory is this process's resident set and heap in use, after
// collections that empty sync.Pools (two: their victim cache survives
// one) and return freed memory to the OS, so both figures count what is
// still held rather than when the scavenger last ran.
func soakMemory() (rss, heap uint64) {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	raw, _ := os.ReadFile("/proc/self/status")
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			rss = kb << 10
		}
	}
	return rss, m.HeapInuse
}

// writeProfile saves a goroutine profile as text, or a heap profile for
// go tool pprof, where a failed run can be read.
func writeProfile(b *testing.B, name, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Log(err)
		return
	}
	defer f.Close()
	level := 0
	if name == "goroutine" {
		level = 1
	}
	if err := pprof.Lookup(name).WriteTo(f, level); err != nil {
		b.Log(err)
	}
}

// soakChild is the flaky child: a bench child process on a fixed
// loopback address, killed and restarted on it.
type soakChild struct {
	addr  string
	cmd   *exec.Cmd
	stdin io.Closer
}

// start runs the child and returns once it listens. The port may take a
// moment to come free after a kill, so a child that could not listen is
// started again.
func (c *soakChild) start() error {
	var last error
	retry := time.NewTicker(100 * time.Millisecond)
	defer retry.Stop()
	for attempt := 0; attempt < 50; attempt++ {
		if attempt > 0 {
			<-retry.C
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), benchServeEnv+"=child", "AGENTENV_BENCH_NAME=flaky", "AGENTENV_BENCH_ADDR="+c.addr)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if strings.HasPrefix(line, "LISTEN ") {
			c.cmd, c.stdin = cmd, stdin
			return nil
		}
		stdin.Close()
		_ = cmd.Wait()
		last = fmt.Errorf("flaky child did not listen on %s: %q %v", c.addr, line, err)
	}
	return last
}

// kill SIGKILLs the child and reaps it.
func (c *soakChild) kill() {
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
	c.stdin.Close()
}

// stop ends the child the polite way (its stdin closes).
func (c *soakChild) stop() {
	c.stdin.Close()
	_ = c.cmd.Wait()
}

// cycle kills the child every period, restarts it down later, and returns
// the windows in which it was down once ctx ends (the child is up then).
func (c *soakChild) cycle(ctx context.Context, every, down time.Duration) ([]soakWindow, error) {
	var out []soakWindow
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return out, nil
		case <-tick.C:
		}
		w := soakWindow{down: time.Now()}
		c.kill()
		select { // the run may end mid-outage: restart at once then
		case <-time.After(down):
		case <-ctx.Done():
		}
		if err := c.start(); err != nil {
			return out, err
		}
		w.up = time.Now()
		out = append(out, w)
	}
}

// soakError is one failed operation of the load generator.
type soakError struct {
	Kind  string `json:"kind"`
	Start int64  `json:"start"` // unix ns
	End   int64  `json:"end"`
	Msg   string `json:"msg"`
}

// during reports whether the operation overlapped a downtime window
// (extended by grace after the restart).
func (e soakError) during(ws []soakWindow, grace time.Duration) bool {
	for _, w := range ws {
		if e.Start <= w.up.Add(grace).UnixNano() && e.End >= w.down.UnixNano() {
			return true
		}
	}
	return false
}

// soakKind is the figures of one kind of operation.
type soakKind struct {
	Name   string `json:"name"`
	Calls  int64  `json:"calls"`
	Errors int64  `json:"errors"`
	P50    int64  `json:"p50_us"`
	P99    int64  `json:"p99_us"`
}

// soakResult is what the load generator reports when it ends.
type soakResult struct {
	Kinds     []soakKind `json:"kinds"`
	Sessions  int64      `json:"sessions"`
	Abandoned int64      `json:"abandoned"`
}

// runSoakLoad runs the load generator process against base for d and
// returns its figures and every error it saw.
func runSoakLoad(base string, d time.Duration, conc, abandon int) (*soakResult, []soakError, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServeEnv+"=soak-load", "AGENTENV_BENCH_TARGET="+base,
		soakForEnv+"="+d.String(), soakConcEnv+"="+strconv.Itoa(conc), soakAbandonEnv+"="+strconv.Itoa(abandon))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	var res *soakResult
	var errs []soakError
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		kind, payload, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "ERR":
			var e soakError
			if json.Unmarshal([]byte(payload), &e) == nil {
				errs = append(errs, e)
			}
		case "RESULT":
			res = &soakResult{}
			if err := json.Unmarshal([]byte(payload), res); err != nil {
				return nil, nil, err
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		return nil, nil, fmt.Errorf("load generator: %w", err)
	}
	if res == nil {
		return nil, nil, errors.New("load generator reported no result")
	}
	return res, errs, nil
}

// soakLoad is the load generator process: conc workers run MCP sessions
// against the gateway at base until the run time ends, then close their
// sessions. Errors go to stdout as they happen ("ERR <json>"), figures
// once at the end ("RESULT <json>").
func soakLoad(base string) int {
	d, err := time.ParseDuration(os.Getenv(soakForEnv))
	conc, cerr := strconv.Atoi(os.Getenv(soakConcEnv))
	abandon, aerr := strconv.Atoi(os.Getenv(soakAbandonEnv))
	if err != nil || cerr != nil || aerr != nil || conc <= 0 {
		fmt.Fprintln(os.Stderr, "soak-load: bad", soakForEnv, soakConcEnv, "or", soakAbandonEnv)
		return 2
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2 * conc
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	out := &soakOut{w: bufio.NewWriter(os.Stdout)}
	end := time.Now().Add(d)
	workers := make([]*soakWorker, conc)
	var wg sync.WaitGroup
	for i := range workers {
		w := &soakWorker{id: i, base: base, hc: hc, out: out, abandon: abandon, rng: rand.New(rand.NewPCG(uint64(i), 42)),
			lat: map[string][]time.Duration{}, errs: map[string]int64{}}
		workers[i] = w
		wg.Go(func() { w.run(end) })
	}
	wg.Wait()
	tr.CloseIdleConnections()
	res := soakResult{}
	for _, k := range []string{"initialize", "mcp-call", "step-call", "trigger", "get_time", "tools/list", "delete"} {
		var lat []time.Duration
		sk := soakKind{Name: k}
		for _, w := range workers {
			lat = append(lat, w.lat[k]...)
			sk.Errors += w.errs[k]
		}
		sk.Calls = int64(len(lat))
		if len(lat) > 0 {
			slices.Sort(lat)
			sk.P50 = lat[len(lat)/2].Microseconds()
			sk.P99 = lat[len(lat)*99/100].Microseconds()
		}
		res.Kinds = append(res.Kinds, sk)
	}
	for _, w := range workers {
		res.Sessions += w.sessions
		res.Abandoned += w.abandoned
	}
	out.line("RESULT", res)
	return 0
}

// soakOut serialises the load generator's stdout lines.
type soakOut struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (o *soakOut) line(kind string, v any) {
	b, _ := json.Marshal(v)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.WriteString(kind + " ")
	o.w.Write(b)
	o.w.WriteByte('\n')
	o.w.Flush()
}

// soakWorker is one of the load generator's concurrent clients.
type soakWorker struct {
	id        int
	abandon   int // percent of sessions left without DELETE
	base      string
	hc        *http.Client
	out       *soakOut
	rng       *rand.Rand
	lat       map[string][]time.Duration
	errs      map[string]int64
	n         int64
	sessions  int64
	abandoned int64
}

// run opens sessions one after another until end.
func (w *soakWorker) run(end time.Time) {
	for time.Now().Before(end) {
		w.session(end)
	}
}

// session is one MCP session's life: initialize, some operations, then
// DELETE or (abandon percent of them) walk away; one in four holds a GET
// stream.
func (w *soakWorker) session(end time.Time) {
	role := [...]string{"default", "agent"}[w.rng.IntN(2)]
	var sid string
	if !w.op("initialize", func() error {
		var err error
		sid, err = w.initialize(role)
		return err
	}) {
		return
	}
	w.sessions++
	if w.rng.IntN(4) == 0 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); w.listen(ctx, sid, role) }()
		defer func() { cancel(); <-done }()
	}
	ops := 20 + w.rng.IntN(181)
	for i := 0; i < ops && time.Now().Before(end); i++ {
		w.n++
		msg := fmt.Sprintf("w%d-%d", w.id, w.n)
		switch r := w.rng.IntN(100); {
		case r < 45:
			tool := [...]string{"items_echo", "flaky_echo"}[r%2]
			w.op("mcp-call", func() error { return w.call(sid, role, tool, msg, msg) })
		case r < 75:
			tool := [...]string{"items_echo", "flaky_echo"}[r%2]
			w.op("step-call", func() error { return w.step(role, tool, msg) })
		case r < 90:
			w.op("trigger", func() error { return w.call(sid, role, "items_mark", msg, msg) })
		case r < 97:
			w.op("get_time", func() error { return w.call(sid, role, "get_time", "", "current_time") })
		default:
			w.op("tools/list", func() error { return w.list(sid, role) })
		}
	}
	if w.rng.IntN(100) < w.abandon {
		w.abandoned++
		return
	}
	w.op("delete", func() error { return w.delete(sid, role) })
}

// op times one operation and records its error, if any.
func (w *soakWorker) op(kind string, f func() error) bool {
	t0 := time.Now()
	err := f()
	t1 := time.Now()
	w.lat[kind] = append(w.lat[kind], t1.Sub(t0))
	if err != nil {
		w.errs[kind]++
		msg := err.Error()
		if len(msg) > 300 {
			msg = msg[:300]
		}
		w.out.line("ERR", soakError{Kind: kind, Start: t0.UnixNano(), End: t1.UnixNano(), Msg: msg})
	}
	return err == nil
}

func (w *soakWorker) post(sid, role, body string) (int, http.Header, []byte, error) {
	req, err := http.NewRequest("POST", w.base+"/mcp", strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(protocol.HeaderRole, role)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, out, err
}

func (w *soakWorker) initialize(role string) (string, error) {
	st, h, body, err := w.post("", role, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"soak","version":"0"}}}`)
	if err != nil {
		return "", err
	}
	sid := h.Get("Mcp-Session-Id")
	if st != http.StatusOK || sid == "" {
		return "", fmt.Errorf("initialize: %d %s", st, body)
	}
	if st, _, body, err = w.post(sid, role, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return "", err
	} else if st != http.StatusAccepted {
		return "", fmt.Errorf("notifications/initialized: %d %s", st, body)
	}
	return sid, nil
}

// call makes one tools/call and checks the answer holds want and is no error.
func (w *soakWorker) call(sid, role, tool, msg, want string) error {
	args := `{}`
	if msg != "" {
		args = `{"msg":"` + msg + `"}`
	}
	st, _, body, err := w.post(sid, role, `{"jsonrpc":"2.0","id":`+strconv.FormatInt(w.n, 10)+`,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+`}}`)
	return soakCheck(tool, st, body, err, want)
}

func (w *soakWorker) list(sid, role string) error {
	st, _, body, err := w.post(sid, role, `{"jsonrpc":"2.0","id":`+strconv.FormatInt(w.n, 10)+`,"method":"tools/list"}`)
	return soakCheck("tools/list", st, body, err, "items_mark")
}

func (w *soakWorker) step(role, tool, msg string) error {
	req, err := http.NewRequest("POST", w.base+"/step", strings.NewReader(`{"action":"call_tool","tool_name":"`+tool+`","arguments":{"msg":"`+msg+`"}}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(protocol.HeaderRole, role)
	resp, err := w.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return soakCheck("/step "+tool, resp.StatusCode, body, err, msg)
}

func (w *soakWorker) delete(sid, role string) error {
	req, err := http.NewRequest("DELETE", w.base+"/mcp", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set(protocol.HeaderRole, role)
	resp, err := w.hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("DELETE: %d", resp.StatusCode)
	}
	return nil
}

// listen holds the session's GET stream open until ctx ends.
func (w *soakWorker) listen(ctx context.Context, sid, role string) {
	req, err := http.NewRequestWithContext(ctx, "GET", w.base+"/mcp", nil)
	if err != nil {
		return
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set(protocol.HeaderRole, role)
	resp, err := w.hc.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
}

// soakCheck turns a failed or wrong answer into an error.
func soakCheck(what string, st int, body []byte, err error, want string) error {
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case st != http.StatusOK:
		return fmt.Errorf("%s: status %d %s", what, st, body)
	case strings.Contains(string(body), `"isError":true`), strings.Contains(string(body), `"error":{`),
		!strings.Contains(string(body), want):
		return fmt.Errorf("%s: %s", what, body)
	}
	return nil
}

// TestSoakHarness checks the soak's own parts that decide pass or fail
// without running it: the plan read from AGENTENV_SOAK and the rule that
// places an error inside or outside a downtime window.
func TestSoakHarness(t *testing.T) {
	for v, want := range map[string][2]time.Duration{
		"short": {2 * time.Minute, 30 * time.Second},
		"full":  {20 * time.Minute, time.Minute},
		"20m":   {20 * time.Minute, time.Minute},
		"2m":    {2 * time.Minute, 30 * time.Second},
	} {
		p, err := soakPlanFromEnv(v, "")
		if err != nil || p.run != want[0] || p.killEvery != want[1] || p.conc != 32 || p.abandon != 10 {
			t.Errorf("%s: %+v %v", v, p, err)
		}
	}
	for _, v := range []string{"yes", "-1m", "0"} {
		if _, err := soakPlanFromEnv(v, ""); err == nil || !strings.Contains(err.Error(), soakEnv) {
			t.Errorf("%q accepted: %v", v, err)
		}
	}
	if p, err := soakPlanFromEnv("short", "0"); err != nil || p.abandon != 0 {
		t.Errorf("abandon 0: %+v %v", p, err)
	}
	for _, v := range []string{"-1", "101", "ten"} {
		if _, err := soakPlanFromEnv("short", v); err == nil || !strings.Contains(err.Error(), soakAbandonEnv) {
			t.Errorf("abandon %q accepted: %v", v, err)
		}
	}
	t0 := time.Unix(1000, 0)
	at := func(s float64) int64 { return t0.Add(time.Duration(s * float64(time.Second))).UnixNano() }
	ws := []soakWindow{{down: t0.Add(10 * time.Second), up: t0.Add(13 * time.Second)}}
	for _, c := range []struct {
		start, end float64
		during     bool
	}{
		{1, 2, false},    // long before the kill
		{9, 10.5, true},  // in flight when the child was killed
		{11, 12, true},   // while it was down
		{17.9, 18, true}, // within the 5 s grace after the restart
		{18.5, 19, false},
	} {
		e := soakError{Start: at(c.start), End: at(c.end)}
		if got := e.during(ws, 5*time.Second); got != c.during {
			t.Errorf("error %.1f-%.1fs: during = %v", c.start, c.end, got)
		}
	}
}
