package kubernetes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/agentenv/agentenv/internal/kubecluster"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox/kubernetes"
)

// The scale test: AGENTENV_KUBE_SCALE env instances (the figure
// is 2000) created through the provider on 20 kwok fake nodes, all held
// Running at once, then torn down. The provider runs in a child process
// (this test binary again, TestScaleWorker) so its CPU time and peak RSS
// are the provider's alone, not the harness's binder's or the test's.
// Figures are logged; only failures (an instance that did not run, an
// object left behind, a process left over) fail the test.

const (
	envScale       = "AGENTENV_KUBE_SCALE"
	envScaleConc   = "AGENTENV_KUBE_SCALE_CONCURRENCY"
	envScaleWorker = "AGENTENV_KUBE_SCALE_WORKER" // the child's job, JSON
)

// scaleJob is what the parent hands the child.
type scaleJob struct {
	URL, Token, Namespace, Out string
	Instances, Concurrency     int
}

// scaleResult is what the child reports.
type scaleResult struct {
	Up, Down         []time.Duration // per instance: create to Running, teardown
	UpWall, DownWall time.Duration
	Calls            map[string]int // "<phase> <verb> <resource>" -> requests
	PeakHeap         uint64
	Failed           []string
}

func TestScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envScale))
	if n <= 0 {
		t.Skipf("%s (a number of env instances, e.g. 2000) is unset", envScale)
	}
	if os.Getenv(kubecluster.EnvBin) == "" {
		t.Skipf("the scale test needs %s: run integration/kube/build.sh and export the folder it prints", kubecluster.EnvBin)
	}
	conc, _ := strconv.Atoi(os.Getenv(envScaleConc))
	if conc <= 0 {
		conc = 100
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	c, err := kubecluster.Start(ctx, &kubecluster.Options{Nodes: 20})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
	}()
	ns := "scale"
	if err := c.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	job := scaleJob{URL: c.URL, Token: c.AdminToken, Namespace: ns, Out: filepath.Join(t.TempDir(), "result.json"), Instances: n, Concurrency: conc}
	raw, _ := json.Marshal(job)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestScaleWorker$", "-test.v", "-test.timeout=0")
	cmd.Env = append(os.Environ(), envScaleWorker+"="+string(raw))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("worker: %v\n%s", err, out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	b, err := os.ReadFile(job.Out)
	if err != nil {
		t.Fatal(err)
	}
	var r scaleResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Failed) > 0 {
		t.Errorf("%d of %d instances failed; first: %s", len(r.Failed), n, r.Failed[0])
	}
	if left := objects(t, admin(t, c), ns, kubernetes.LabelSandbox); len(left) > 0 {
		t.Errorf("%d objects left after teardown, e.g. %s", len(left), left[0])
	}
	total, up, down := 0, 0, 0
	for k, v := range r.Calls {
		total += v
		switch k[:2] {
		case "up":
			up += v
		case "do":
			down += v
		}
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	t.Logf("%d env instances (a server and a gateway each: %d Pods) on %d kwok nodes, %d in flight, race detector %v",
		n, 2*n, len(c.Nodes), conc, raceEnabled)
	t.Logf("API calls per instance: %.2f (%.2f to create and wait, %.2f to tear down); by call: %v",
		float64(total)/float64(n), float64(up)/float64(n), float64(down)/float64(n), r.Calls)
	t.Logf("time to Running: p50 %v, p99 %v, max %v; all up in %v (%.1f instances/s)",
		pct(r.Up, 0.50), pct(r.Up, 0.99), pct(r.Up, 1), r.UpWall.Round(time.Millisecond), float64(n)/r.UpWall.Seconds())
	t.Logf("teardown: p50 %v, p99 %v; all down in %v", pct(r.Down, 0.50), pct(r.Down, 0.99), r.DownWall.Round(time.Millisecond))
	t.Logf("provider process: CPU %v (user %v, sys %v; %.2f ms per instance), peak RSS %d MiB, peak Go heap %d MiB; harness binds %d",
		cpu.Round(time.Millisecond), time.Duration(ru.Utime.Nano()).Round(time.Millisecond), time.Duration(ru.Stime.Nano()).Round(time.Millisecond),
		float64(cpu.Microseconds())/1000/float64(n), ru.Maxrss/1024, r.PeakHeap>>20, c.Binds())
}

// pct is the q-quantile of ds (q=1: the largest).
func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))].Round(time.Millisecond)
}

// TestScaleWorker is the child of TestScale; it skips unless started by it.
func TestScaleWorker(t *testing.T) {
	raw := os.Getenv(envScaleWorker)
	if raw == "" {
		t.Skip("run by TestScale in a child process")
	}
	var job scaleJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var phase atomic.Value
	phase.Store("up")
	var mu sync.Mutex
	calls := map[string]int{}
	rc := &rest.Config{Host: job.URL, BearerToken: job.Token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			k := phase.Load().(string) + " " + callName(req)
			mu.Lock()
			calls[k]++
			mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	// The provider as configured by default (its own QPS and burst).
	p, err := kubernetes.New(kubernetes.Config{Namespace: job.Namespace}, &kubernetes.Options{REST: rc, StoreID: "scale"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	var peak atomic.Uint64
	stopSample := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stopSample:
				return
			case <-tick.C:
			}
		}
	}()

	r := scaleResult{Up: make([]time.Duration, job.Instances), Down: make([]time.Duration, job.Instances)}
	groups := make([]envdeploy.Group, job.Instances)
	var failMu sync.Mutex
	fail := func(err error) {
		failMu.Lock()
		r.Failed = append(r.Failed, err.Error())
		failMu.Unlock()
	}
	each := func(f func(i int)) time.Duration {
		start := time.Now()
		sem := make(chan struct{}, job.Concurrency)
		var wg sync.WaitGroup
		for i := range job.Instances {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				f(i)
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	expires := time.Now().Add(time.Hour)
	r.UpWall = each(func(i int) {
		t0 := time.Now()
		g, err := p.CreateGroup(ctx, envdeploy.GroupSpec{Labels: envdeploy.OwnerLabels(fmt.Sprintf("scale-%d", i), false, expires)})
		if err != nil {
			fail(err)
			return
		}
		groups[i] = g
		// An env instance as envdeploy deploys one on a provider that
		// plans addresses: its server and its gateway start together.
		srv := envdeploy.Workload{Name: "echo", Role: envdeploy.TypeMCPServer, Port: envdeploy.MCPPort, PortEnv: "MCP_PORT",
			Env: map[string]string{"MCP_HOST": "0.0.0.0", "ENVIRONMENT_NAME": "echo"}, Source: envdeploy.Source{Ref: "registry.example/echo@sha256:0123"}}
		gw := envdeploy.Workload{Name: "gateway", Role: "gateway", Port: envdeploy.MCPPort, PortEnv: "MCP_PORT", Publish: true,
			Env:    map[string]string{"INTERNAL_MCP_SERVERS": "echo=" + g.(envdeploy.AddressPlanner).InternalURL(srv) + "/mcp", "GATEWAY_CONTROL_TOKEN": "t"},
			Source: envdeploy.Source{Ref: "registry.example/gateway@sha256:4567"}}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for j, w := range []envdeploy.Workload{srv, gw} {
			wg.Go(func() { _, errs[j] = g.Run(ctx, w) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				fail(err)
				return
			}
		}
		r.Up[i] = time.Since(t0)
	})
	// All held at once: every Pod of every instance is Running now.
	phase.Store("check")
	if pods, err := p.Clientset().CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelSandbox}); err != nil {
		fail(err)
	} else if running := countRunning(pods.Items); running != 2*job.Instances {
		fail(fmt.Errorf("%d Pods running of %d", running, 2*job.Instances))
	}
	phase.Store("down")
	r.DownWall = each(func(i int) {
		if groups[i] == nil {
			return
		}
		t0 := time.Now()
		if err := groups[i].Terminate(ctx); err != nil {
			fail(err)
			return
		}
		r.Down[i] = time.Since(t0)
	})
	close(stopSample)
	<-sampled
	r.PeakHeap = peak.Load()
	mu.Lock()
	r.Calls = calls
	mu.Unlock()
	delete(r.Calls, "check list pods") // the test's own check, not the provider's
	b, _ := json.Marshal(r)
	if err := os.WriteFile(job.Out, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// callName is "<verb> <resource>" of an API request, e.g. "create pods",
// "watch pods", "deletecollection secrets".
func callName(req *http.Request) string {
	// /api/v1/namespaces/<ns>/<resource>[/<name>[/<sub>]]
	parts := splitPath(req.URL.Path)
	res, named := "", false
	for i, s := range parts {
		if s == "namespaces" && i+2 < len(parts) {
			res = parts[i+2]
			named = i+3 < len(parts)
			break
		}
	}
	verb := map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch"}[req.Method]
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	}
	return verb + " " + res
}

func splitPath(p string) []string {
	var out []string
	for s := range strings.SplitSeq(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func countRunning(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}
