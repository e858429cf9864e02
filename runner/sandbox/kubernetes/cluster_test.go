package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/agentenv/agentenv/internal/kubecluster"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/kubernetes"
)

// Tier 1: the provider against a real API server and etcd, with kwok
// fake nodes (Pods run, but nothing executes in them).

const unpullable = "unpullable.invalid/"

var (
	clusterOnce sync.Once
	cluster     *kubecluster.Cluster
	clusterErr  error
)

// TestMain stops the shared cluster and fails the run if anything of it
// is left behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "kubecluster stop:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testCluster starts one cluster for the package's tests, or skips.
func testCluster(t *testing.T) *kubecluster.Cluster {
	t.Helper()
	if os.Getenv(kubecluster.EnvBin) == "" {
		t.Skipf("tier 1 Kubernetes tests need %s: run integration/kube/build.sh and export the folder it prints", kubecluster.EnvBin)
	}
	clusterOnce.Do(func() {
		cluster, clusterErr = kubecluster.Start(context.Background(), &kubecluster.Options{Nodes: 2, NoBindImagePrefix: unpullable})
	})
	if clusterErr != nil {
		t.Fatalf("start cluster: %v", clusterErr)
	}
	return cluster
}

var nsSeq struct {
	sync.Mutex
	n int
}

// namespace creates a fresh namespace for one test.
func namespace(t *testing.T, c *kubecluster.Cluster) string {
	t.Helper()
	nsSeq.Lock()
	nsSeq.n++
	name := fmt.Sprintf("t%d-%s", nsSeq.n, strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	nsSeq.Unlock()
	if len(name) > 60 {
		name = strings.TrimRight(name[:60], "-")
	}
	if err := c.CreateNamespace(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	return name
}

func admin(t *testing.T, c *kubecluster.Cluster) k8s.Interface {
	t.Helper()
	cs, err := k8s.NewForConfig(c.REST(c.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func provider(t *testing.T, c *kubecluster.Cluster, ns, store string, cfg kubernetes.Config) *kubernetes.Provider {
	t.Helper()
	cfg.Namespace = ns
	p, err := kubernetes.New(cfg, &kubernetes.Options{REST: c.REST(c.AdminToken), StoreID: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// objects lists every Pod, Service and Secret labelled with a group.
func objects(t *testing.T, cs k8s.Interface, ns, sel string) []string {
	t.Helper()
	ctx := context.Background()
	l := metav1.ListOptions{LabelSelector: sel}
	var out []string
	pods, err := cs.CoreV1().Pods(ns).List(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range pods.Items {
		out = append(out, "pod/"+o.Name)
	}
	svcs, _ := cs.CoreV1().Services(ns).List(ctx, l)
	for _, o := range svcs.Items {
		out = append(out, "service/"+o.Name)
	}
	secs, _ := cs.CoreV1().Secrets(ns).List(ctx, l)
	for _, o := range secs.Items {
		out = append(out, "secret/"+o.Name)
	}
	return out
}

func TestLifecycleAndLabels(t *testing.T) {
	c := testCluster(t)
	ns := namespace(t, c)
	cs := admin(t, c)
	p := provider(t, c, ns, "store-a", kubernetes.Config{})
	ctx := context.Background()
	if err := p.Check(ctx); err != nil {
		t.Fatal(err)
	}
	g, err := p.CreateGroup(ctx, envdeploy.GroupSpec{Labels: envdeploy.OwnerLabels("inst-1", true, time.Now().Add(time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	w := envdeploy.Workload{Name: "echo", Role: "mcp_server", Port: envdeploy.MCPPort, PortEnv: "MCP_PORT",
		Env: map[string]string{"API_KEY": "s3cret"}, Source: envdeploy.Source{Ref: "registry.example/echo@sha256:0123", What: "echo"}}
	planned := g.(envdeploy.AddressPlanner).InternalURL(w)
	ep, err := g.Run(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Internal != planned {
		t.Errorf("internal %q, planned %q", ep.Internal, planned)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelSandbox + "=" + g.ID()})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods %v %v", pods, err)
	}
	pod := pods.Items[0]
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s", pod.Status.Phase)
	}
	for k, want := range map[string]string{kubernetes.LabelStore: "store-a", kubernetes.LabelInstance: "inst-1", kubernetes.LabelKind: "mcp_server"} {
		if pod.Labels[k] != want {
			t.Errorf("pod label %s = %q, want %q", k, pod.Labels[k], want)
		}
	}
	if d := pod.Spec.ActiveDeadlineSeconds; d == nil || *d < 3500 || *d > 3600 {
		t.Errorf("activeDeadlineSeconds from the expiry label: %v", d)
	}
	raw, _ := pod.Marshal()
	if strings.Contains(string(raw), "s3cret") {
		t.Error("the workload's secret is in the pod object")
	}
	svc, err := cs.CoreV1().Services(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || svc.Spec.Ports[0].Port != envdeploy.MCPPort || svc.Labels[kubernetes.LabelInstance] != "inst-1" {
		t.Errorf("service %+v %v", svc, err)
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || string(sec.Data["API_KEY"]) != "s3cret" || string(sec.Data["MCP_PORT"]) != fmt.Sprint(envdeploy.MCPPort) {
		t.Errorf("secret %v %v", sec.Data, err)
	}
	if _, exited := g.(envdeploy.ExitWatcher).Exited(ctx); exited {
		t.Error("a running workload reported as exited")
	}
	again, err := p.OpenGroup(ctx, g.ID())
	if err != nil || again.ID() != g.ID() {
		t.Fatalf("open group: %v", err)
	}
	if err := again.Terminate(ctx); err != nil {
		t.Fatal(err)
	}
	if left := objects(t, cs, ns, kubernetes.LabelSandbox+"="+g.ID()); len(left) > 0 {
		t.Errorf("left after teardown: %v", left)
	}
	if err := g.Terminate(ctx); err != nil {
		t.Errorf("second terminate: %v", err)
	}
	if _, err := p.OpenGroup(ctx, g.ID()); !errors.Is(err, envdeploy.ErrNotFound) {
		t.Errorf("open after teardown: %v", err)
	}
}

func TestSandboxTTLAndResources(t *testing.T) {
	c := testCluster(t)
	ns := namespace(t, c)
	cs := admin(t, c)
	p := provider(t, c, ns, "store-a", kubernetes.Config{})
	ctx := context.Background()
	sb, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: "registry.example/tool:1", TTL: 90 * time.Second, CPU: 0.5, MemoryMB: 256, Labels: map[string]string{"team": "rl"}})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, sb.(*kubernetes.Sandbox).PodName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := pod.Spec.ActiveDeadlineSeconds; d == nil || *d != 90 {
		t.Errorf("activeDeadlineSeconds %v, want 90", d)
	}
	r := pod.Spec.Containers[0].Resources
	if r.Requests.Cpu().MilliValue() != 500 || r.Limits.Memory().Value() != 256<<20 {
		t.Errorf("resources %+v", r)
	}
	if pod.Labels[kubernetes.LabelKind] != "sandbox" {
		t.Errorf("kind label %q", pod.Labels[kubernetes.LabelKind])
	}
	h := sb.Handle()
	back, err := p.GetSandbox(ctx, h)
	if err != nil || back.ID() != sb.ID() {
		t.Fatalf("reconnect: %v", err)
	}
	if err := sb.Terminate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sb.Terminate(ctx); err != nil {
		t.Errorf("second terminate: %v", err)
	}
	if _, err := sb.Exec(ctx, []string{"true"}, nil); !errors.Is(err, sandbox.ErrTerminated) {
		t.Errorf("exec after terminate: %v", err)
	}
	if _, err := p.GetSandbox(ctx, h); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("reconnect after terminate: %v", err)
	}
	if left := objects(t, cs, ns, kubernetes.LabelSandbox); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}

// TestSweep: a sweep deletes the sandboxes created with its labels, whole,
// and leaves the one with other labels.
func TestSweep(t *testing.T) {
	c := testCluster(t)
	ns := namespace(t, c)
	cs := admin(t, c)
	p := provider(t, c, ns, "store-a", kubernetes.Config{})
	ctx := context.Background()
	mk := func(step string) sandbox.Sandbox {
		t.Helper()
		sb, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: "registry.example/tool:1",
			Labels: map[string]string{"run": "r1", "step": step}})
		if err != nil {
			t.Fatal(err)
		}
		return sb
	}
	gone, kept := mk("a"), mk("b")
	if _, err := p.Sweep(ctx, nil); !errors.Is(err, sandbox.ErrNoSweepLabels) {
		t.Errorf("sweep without labels: %v", err)
	}
	ids, err := p.Sweep(ctx, map[string]string{"run": "r1", "step": "a"})
	if err != nil || len(ids) != 1 || ids[0] != gone.ID() {
		t.Fatalf("Sweep = %v, %v; want [%s]", ids, err, gone.ID())
	}
	if _, err := p.GetSandbox(ctx, gone.Handle()); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("swept sandbox reconnects: %v", err)
	}
	if _, err := p.GetSandbox(ctx, kept.Handle()); err != nil {
		t.Errorf("the other sandbox went too: %v", err)
	}
	if err := kept.Terminate(ctx); err != nil {
		t.Fatal(err)
	}
	if left := objects(t, cs, ns, kubernetes.LabelSandbox); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}

// TestTTLEndsThePod: at activeDeadlineSeconds the node fails the Pod
// (kwok plays the kubelet's part), and the group reports the workload as
// exited, which ends an episode early; teardown still removes everything.
func TestTTLEndsThePod(t *testing.T) {
	c := testCluster(t)
	ns := namespace(t, c)
	cs := admin(t, c)
	p := provider(t, c, ns, "store-a", kubernetes.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, err := p.CreateGroup(ctx, envdeploy.GroupSpec{Labels: envdeploy.OwnerLabels("inst-ttl", false, time.Now().Add(3*time.Second))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(ctx, envdeploy.Workload{Name: "srv", Role: "mcp_server", Port: 80, Source: envdeploy.Source{Ref: "registry.example/s:1"}}); err != nil {
		t.Fatal(err)
	}
	// Polled: nothing tells the runner when a Pod ends but looking.
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if name, exited := g.(envdeploy.ExitWatcher).Exited(ctx); exited {
			if name != "srv" {
				t.Errorf("exited workload %q, want srv", name)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the pod did not end at its deadline: %v", ctx.Err())
		case <-tick.C:
		}
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelSandbox + "=" + g.ID()})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Reason != "DeadlineExceeded" {
		t.Errorf("pods %+v %v, want one failed with DeadlineExceeded", pods, err)
	}
	if err := g.Terminate(ctx); err != nil {
		t.Fatal(err)
	}
	if left := objects(t, cs, ns, kubernetes.LabelSandbox+"="+g.ID()); len(left) > 0 {
		t.Errorf("left after teardown: %v", left)
	}
}

func TestPruneKeepsOtherStores(t *testing.T) {
	c := testCluster(t)
	ns := namespace(t, c)
	cs := admin(t, c)
	ctx := context.Background()
	// Expired by the time the rule looks (an hour on), not when created:
	// a Pod created already past its deadline could fail (the deadline
	// stage) before the deploy saw it run.
	expires := time.Now().Add(time.Hour)
	mk := func(store, inst string) string {
		p := provider(t, c, ns, store, kubernetes.Config{})
		g, err := p.CreateGroup(ctx, envdeploy.GroupSpec{Labels: envdeploy.OwnerLabels(inst, false, expires)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Run(ctx, envdeploy.Workload{Name: "srv", Role: "mcp_server", Port: 80, Source: envdeploy.Source{Ref: "registry.example/s:1"}}); err != nil {
			t.Fatal(err)
		}
		return g.ID()
	}
	mine, theirs := mk("store-a", "i-a"), mk("store-b", "i-b")
	p := provider(t, c, ns, "store-a", kubernetes.Config{})
	rule := envdeploy.PruneRule{Now: expires.Add(time.Hour), StoreID: "store-a"}
	removed, err := p.Prune(ctx, func(l map[string]string) bool { o, _ := rule.Decide(l); return o })
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || !strings.HasPrefix(removed[0], mine) {
		t.Errorf("removed %v, want only %s", removed, mine)
	}
	if left := objects(t, cs, ns, kubernetes.LabelSandbox+"="+mine); len(left) > 0 {
		t.Errorf("this store's orphan left: %v", left)
	}
	if left := objects(t, cs, ns, kubernetes.LabelSandbox+"="+theirs); len(left) != 2 {
		t.Errorf("the other store's objects: %v, want its pod and service untouched", left)
	}
}

func TestForbiddenVerbNamesTheCause(t *testing.T) {
	c := testCluster(t)
	ns := namespace(t, c)
	cs := admin(t, c)
	ctx := context.Background()
	// The user may read Pods but not create them.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-pods"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "events"}, Verbs: []string{"get", "list", "watch"}}}}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-pods"}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-pods"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: kubecluster.UserName}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := kubernetes.New(kubernetes.Config{Namespace: ns}, &kubernetes.Options{REST: c.REST(c.UserToken)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: "registry.example/tool:1"})
	if !errors.Is(err, kubernetes.ErrForbidden) || !strings.Contains(err.Error(), `cannot create resource "pods"`) || !strings.Contains(err.Error(), kubecluster.UserName) {
		t.Errorf("error %v, want ErrForbidden naming the user and the verb", err)
	}
	if left := objects(t, cs, ns, kubernetes.LabelSandbox); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}

func TestMissingNamespace(t *testing.T) {
	c := testCluster(t)
	p := provider(t, c, "no-such-namespace", "", kubernetes.Config{})
	_, err := p.CreateSandbox(context.Background(), sandbox.Spec{Mode: sandbox.ModeContainer, Image: "registry.example/tool:1"})
	if !errors.Is(err, kubernetes.ErrNamespaceMissing) || !strings.Contains(err.Error(), "no-such-namespace") {
		t.Errorf("error %v, want ErrNamespaceMissing naming it", err)
	}
}

func TestUnreachableCluster(t *testing.T) {
	// No cluster needed: a closed loopback port.
	p, err := kubernetes.New(kubernetes.Config{}, &kubernetes.Options{REST: closedPortREST(t)})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Check(context.Background())
	if !errors.Is(err, envdeploy.ErrEngineUnavailable) || !strings.Contains(err.Error(), "no Kubernetes API server answers") {
		t.Errorf("error %v", err)
	}
}

// TestImagePullFailure plays the kubelet for a Pod the cluster never
// binds: the deploy fails with the Pod's events, early on
// ImagePullBackOff, at deploy_timeout on a pull still retried, and
// removes what it created.
func TestImagePullFailure(t *testing.T) {
	c := testCluster(t)
	cs := admin(t, c)
	for _, tc := range []struct {
		reason  string
		timeout time.Duration
		early   bool
	}{{"ImagePullBackOff", 60 * time.Second, true}, {"ErrImagePull", 3 * time.Second, false}} {
		t.Run(tc.reason, func(t *testing.T) {
			ns := namespace(t, c)
			p := provider(t, c, ns, "store-a", kubernetes.Config{DeployTimeout: kubernetes.Duration(tc.timeout)})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go kubeletPullFailure(ctx, t, cs, ns, tc.reason)
			_, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: unpullable + "tool:1"})
			var pe *kubernetes.PodError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a *PodError", err)
			}
			if pe.Timeout == tc.early {
				t.Errorf("timeout=%v, want %v: %v", pe.Timeout, !tc.early, err)
			}
			if !strings.Contains(err.Error(), "Failed to pull image") {
				t.Errorf("error lacks the pod's events: %v", err)
			}
			if left := objects(t, cs, ns, kubernetes.LabelSandbox); len(left) > 0 {
				t.Errorf("left: %v", left)
			}
		})
	}
}

// kubeletPullFailure waits for the sandbox's Pod and reports a pull
// failure as a kubelet would: an event and a waiting container.
func kubeletPullFailure(ctx context.Context, t *testing.T, cs k8s.Interface, ns, reason string) {
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok || len(pod.Status.ContainerStatuses) > 0 {
			continue
		}
		msg := fmt.Sprintf("Failed to pull image %q: no such host", pod.Spec.Containers[0].Image)
		_, _ = cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: pod.Name + "."},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name, UID: pod.UID},
			Type:           corev1.EventTypeWarning, Reason: "Failed", Message: msg, Count: 1,
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Source: corev1.EventSource{Component: "kubelet"},
		}, metav1.CreateOptions{})
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: pod.Spec.Containers[0].Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
			t.Logf("update status: %v", err)
		}
		return
	}
}

// TestDeletedWhileStarting: a Pod deleted while the deploy waits for it
// (never bound, so never running) fails the deploy with that cause, well
// before its deploy_timeout.
func TestDeletedWhileStarting(t *testing.T) {
	c := testCluster(t)
	cs := admin(t, c)
	ns := namespace(t, c)
	p := provider(t, c, ns, "store-a", kubernetes.Config{DeployTimeout: kubernetes.Duration(10 * time.Minute)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		defer w.Stop()
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				_ = cs.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{})
				return
			}
		}
	}()
	_, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: unpullable + "tool:1"})
	var pe *kubernetes.PodError
	if !errors.As(err, &pe) || pe.Timeout || !strings.Contains(err.Error(), "deleted while starting") {
		t.Fatalf("error %v, want a *PodError saying the pod was deleted", err)
	}
	if left := objects(t, cs, ns, kubernetes.LabelSandbox); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}
