package main

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/agentenv/agentenv/internal/kubecluster"
	"github.com/agentenv/agentenv/internal/kubecluster/kubeclustertest"
	"github.com/agentenv/agentenv/registry/ociregistry"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox/kubernetes"
)

// TestRealNodeRunBundles runs two bundles through the CLI on the
// kubernetes sandbox, on a real node (tier 2): echo-mcp (the echo env
// and the gateway registered from source, their images pushed by digest
// to the project's registry and pulled by the kubelet) and q3-email (a
// scripted agent, outcome and reply checks), task run of an echo task,
// an eval of it with k=2 at once, then env deploy and env teardown of
// the echo env. Nothing of any of them is left in the cluster.
func TestRealNodeRunBundles(t *testing.T) {
	reg, err := ociregistry.Start("127.0.0.1:0", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cl := kubeclustertest.RealNode(t, &kubecluster.Options{PlainHTTPRegistries: []string{reg.Addr()}})
	const ns = "agentenv-e2e"
	if err := cl.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}

	c := newCLI(t)
	cfg := writeFile(t, filepath.Join(t.TempDir(), "config.toml"), "[sandbox.providers.kubernetes.config]\n"+
		"kubeconfig = "+strconv.Quote(cl.Kubeconfig())+"\n"+
		"namespace = "+strconv.Quote(ns)+"\n"+
		"host_network = true\n"+
		"endpoint_mode = \"port-forward\"\n"+
		"registry = "+strconv.Quote(reg.Addr())+"\n")
	t.Setenv("AGENT_ENV_CONFIG", cfg)

	cs, err := k8s.NewForConfig(cl.REST(cl.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	// The workloads each run must have run on the node, by kind, from
	// images the kubelet pulled by digest from the project's registry.
	for _, tc := range []struct {
		bundle, want string
		kinds        []string
	}{
		{"echo-mcp", "passed (echo: 1)", []string{"gateway", "mcp_server"}},
		{"q3-email", "passed (outcome: 1, reply: 1)", []string{"agent", "gateway", "mcp_server"}},
	} {
		seen := watchPods(ctx, t, cs, ns)
		start := time.Now()
		code, out, errb := c.run("run", tc.bundle, "--sandbox", "kubernetes")
		t.Logf("run %s --sandbox kubernetes: %v", tc.bundle, time.Since(start).Round(10*time.Millisecond))
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Fatalf("run %s: exit %d\n%s\n%s", tc.bundle, code, out, errb)
		}
		var kinds []string
		for name, pi := range seen() {
			kinds = append(kinds, pi.kind)
			if !pi.running || !strings.HasPrefix(pi.image, reg.Addr()+"/") || !strings.Contains(pi.image, "@sha256:") {
				t.Errorf("%s: Pod %s (%s) ran %v, image %s: want Running from %s by digest", tc.bundle, name, pi.kind, pi.running, pi.image, reg.Addr())
			}
		}
		slices.Sort(kinds)
		if !slices.Equal(kinds, tc.kinds) {
			t.Errorf("%s: Pods of kinds %v, want %v", tc.bundle, kinds, tc.kinds)
		}
		leftovers(t, cs, ns)
	}

	// An echo task through task run, then an eval of it, k=2, both runs
	// at once: two instances share the node's network (host_network
	// plans their ports apart).
	dir := t.TempDir()
	task := writeFile(t, filepath.Join(dir, "echo.json"), `[
  {"id":"env","type":"deploy_env","env_id":"echo","ttl_seconds":600},
  {"id":"echo","type":"env_outcome_verifier","env_id":"echo","verifier_id":"echo",
   "checks":[{"id":"echoes","criterion":"echo_echo answers with its input","tool":"echo_echo",
              "args":{"text":"hello"},"extract":"echo","predicate":{"equals":"hello"}}]},
  {"id":"teardown","type":"teardown_sandboxes","env_ids":["echo"],"fail_task_on_error":false}]`)
	if code, out, errb := c.run("task", "create", task, "--id", "k8s/echo"); code != 0 {
		t.Fatalf("task create: exit %d\n%s\n%s", code, out, errb)
	}
	// task run (which leaves teardown to the task's own step).
	code, out, errb := c.run("task", "run", "k8s/echo", "--sandbox", "kubernetes", "--output-dir", filepath.Join(dir, "task"))
	if code != 0 || !strings.Contains(out, "score (verifier_id=echo): 1\n") || !strings.Contains(out, "Task completed!") {
		t.Fatalf("task run --sandbox kubernetes: exit %d\n%s\n%s", code, out, errb)
	}
	leftovers(t, cs, ns)
	ev := writeFile(t, filepath.Join(dir, "eval.json"), `[{"task_id":"k8s/echo"}]`)
	if code, out, errb := c.run("eval", "create", ev, "--id", "k8s"); code != 0 {
		t.Fatalf("eval create: exit %d\n%s\n%s", code, out, errb)
	}
	seenEval := watchPods(ctx, t, cs, ns)
	code, out, errb = c.run("eval", "run", "--id", "k8s", "--k", "2", "--max-concurrency", "2", "--sandbox", "kubernetes", "--output-dir", filepath.Join(dir, "out"))
	if code != 0 || !containsFields(out, "k8s/echo 1 2 2 1.000 1.000 1.000") {
		t.Fatalf("eval run --sandbox kubernetes: exit %d\n%s\n%s", code, out, errb)
	}
	if n := len(seenEval()); n != 4 {
		t.Errorf("eval run: %d Pods, want a gateway and a server for each of the 2 runs", n)
	}
	leftovers(t, cs, ns)

	// env deploy and env teardown of the echo env the first run registered.
	seen := watchPods(ctx, t, cs, ns)
	code, out, errb = c.run("env", "deploy", "--id", "echo", "--sandbox", "kubernetes", "--ttl-seconds", "600")
	m := instanceIDRe.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("env deploy echo --sandbox kubernetes: exit %d\n%s\n%s", code, out, errb)
	}
	if code, out, errb := c.run("env", "teardown", "--instance-id", m[1]); code != 0 {
		t.Fatalf("env teardown %s: exit %d\n%s\n%s", m[1], code, out, errb)
	}
	var kinds []string
	for name, pi := range seen() {
		kinds = append(kinds, pi.kind)
		if !pi.running {
			t.Errorf("env deploy: Pod %s (%s) never ran", name, pi.kind)
		}
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"gateway", "mcp_server"}) {
		t.Errorf("env deploy: Pods of kinds %v, want the gateway and the echo server", kinds)
	}
	leftovers(t, cs, ns)
}

type podInfo struct {
	kind, image string
	running     bool
}

// watchPods records the Pods of ns from now on; the returned func stops
// the watch and returns what it saw.
func watchPods(ctx context.Context, t *testing.T, cs k8s.Interface, ns string) func() map[string]podInfo {
	t.Helper()
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]podInfo{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			pi := seen[p.Name]
			pi.kind = p.Labels[kubernetes.LabelKind]
			pi.image = p.Spec.Containers[0].Image
			pi.running = pi.running || p.Status.Phase == corev1.PodRunning
			seen[p.Name] = pi
		}
	}()
	return func() map[string]podInfo {
		w.Stop()
		<-done
		return seen
	}
}

// leftovers fails the test for any Service or Secret of the provider's
// (by its managed-by label) left in ns, and for any of its Pods not gone
// within the poll's bound: a deleted Pod stays listed until the kubelet
// has stopped its containers.
func leftovers(t *testing.T, cs k8s.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: kubernetes.LabelManaged + "=agentenv"}
	svcs, err := cs.CoreV1().Services(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := cs.CoreV1().Secrets(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		t.Errorf("Service %s left", s.Name)
	}
	for _, s := range secrets.Items {
		t.Errorf("Secret %s left", s.Name)
	}
	var pods *corev1.PodList
	envdeploytest.Poll(t, func() bool {
		if pods, err = cs.CoreV1().Pods(ns).List(ctx, sel); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				t.Fatalf("Pod %s left (not deleted)", p.Name)
			}
		}
		return len(pods.Items) == 0
	})
}

// containsFields reports whether a line of out has exactly the
// whitespace-separated fields of want (a table row, whatever its widths).
func containsFields(out, want string) bool {
	for _, line := range strings.Split(out, "\n") {
		if slices.Equal(strings.Fields(line), strings.Fields(want)) {
			return true
		}
	}
	return false
}
