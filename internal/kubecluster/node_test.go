package kubecluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/internal/kubecluster"
	"github.com/agentenv/agentenv/registry/ociregistry"
)

// TestRealNodeRunsHostNetworkPod starts the cluster with a real kubelet
// on a private containerd, pushes a FROM scratch image holding an HTTP
// server to a registry on 127.0.0.1 (not the cluster's own), runs it as
// a hostNetwork Pod and gets its answer on 127.0.0.1; Stop must then
// leave nothing behind: folder, port, cgroups, kernel tunables.
func TestRealNodeRunsHostNetworkPod(t *testing.T) {
	if os.Getenv(kubecluster.EnvBin) == "" {
		t.Skipf("the real-node test needs %s: run integration/kube/build.sh apiserver etcd kwok kubelet and export the folder it prints", kubecluster.EnvBin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The kubelet sets these at start; Stop must put them back.
	tunables := map[string]string{}
	for _, f := range []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"} {
		b, _ := os.ReadFile("/proc/sys/" + f)
		tunables[f] = string(b)
	}
	// The workload's image is in a registry of its own, as the project's
	// images are in its registry on 127.0.0.1: the node pulls from it
	// over plain HTTP because Options.PlainHTTPRegistries names it.
	reg, err := ociregistry.Start("127.0.0.1:0", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	ref := pushHello(ctx, t, reg.Addr()+"/hello:v1")
	start := time.Now()
	c, err := kubecluster.Start(ctx, &kubecluster.Options{Kubelet: true, StartTimeout: 3 * time.Minute, PlainHTTPRegistries: []string{reg.Addr()}})
	switch {
	case errors.Is(err, kubecluster.ErrNoBinaries), errors.Is(err, kubecluster.ErrNoContainerd):
		t.Skipf("real node: %v", err)
	case err != nil:
		t.Fatalf("start: %v", err)
	}
	dir := c.Dir
	stopped := false
	defer func() {
		if !stopped {
			if err := c.Stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
		}
	}()
	t.Logf("control plane and node Ready in %v", time.Since(start).Round(100*time.Millisecond))

	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	const text = "hello from a real kubelet"
	if err := c.CreateNamespace(ctx, "real"); err != nil {
		t.Fatal(err)
	}
	cs, err := k8s.NewForConfig(c.REST(c.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	no := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "real"},
		Spec: corev1.PodSpec{
			HostNetwork:                  true,
			AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{
				Name: "hello", Image: ref, Args: []string{addr, text},
				ImagePullPolicy: corev1.PullIfNotPresent,
				// Running is when the process starts; Ready, once the
				// kubelet's probe connects, is when it listens.
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "127.0.0.1", Port: intstr.FromInt(port)}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
	podStart := time.Now()
	if _, err := cs.CoreV1().Pods("real").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReady(ctx, t, cs, c)
	t.Logf("pod Ready %v after create (first pull and the first probe included)", time.Since(podStart).Round(100*time.Millisecond))

	// The server's cgroup must be under the cluster's own folder, which
	// Stop removes, not in a host-wide one.
	cg := serverCgroup(t, port)
	if !strings.HasPrefix(cg, "/"+filepath.Base(dir)+"/") {
		t.Errorf("the Pod's memory cgroup is %q, not under /%s", cg, filepath.Base(dir))
	}

	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("GET the pod's server: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != text {
		t.Fatalf("pod answered %q, want %q", body, text)
	}

	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster folder %s left: %v", dir, err)
	}
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Errorf("the pod's server still answers on %s after Stop", addr)
	}
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory", filepath.Base(dir))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the node's cgroup is left: %v", err)
	}
	for f, was := range tunables {
		if b, _ := os.ReadFile("/proc/sys/" + f); string(b) != was {
			t.Errorf("%s is %q after Stop, was %q", f, b, was)
		}
	}
	if cg != "" {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory", cg)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the Pod's cgroup %s is left: %v", cg, err)
		}
	}
}

// waitReady watches the Pod until it is Ready (or fails).
func waitReady(ctx context.Context, t *testing.T, cs k8s.Interface, c *kubecluster.Cluster) {
	t.Helper()
	w, err := cs.CoreV1().Pods("real").Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "hello").String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var last *corev1.Pod
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed; last status %+v", last)
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			last = p
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					return
				}
			}
			switch p.Status.Phase {
			case corev1.PodFailed, corev1.PodSucceeded:
				t.Fatalf("pod ended: %s %+v\nkubelet log:\n%s", p.Status.Phase, p.Status.ContainerStatuses, c.LogTail("kubelet", 30))
			}
		case <-ctx.Done():
			t.Fatalf("pod not Ready: %v; last status %+v\nkubelet log:\n%s", ctx.Err(), last, c.LogTail("kubelet", 40))
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRealNodeKubeletFailsToStart: a kubelet that exits at once fails
// Start with its log, and the cleanup after it (containerd and all) leaves
// nothing behind.
func TestRealNodeKubeletFailsToStart(t *testing.T) {
	bin := os.Getenv(kubecluster.EnvBin)
	if bin == "" {
		t.Skipf("the real-node test needs %s: run integration/kube/build.sh apiserver etcd kwok kubelet and export the folder it prints", kubecluster.EnvBin)
	}
	dir := t.TempDir()
	for _, f := range []string{"etcd", "kube-apiserver", "kwok", "kwok-stages.yaml"} {
		if err := os.Symlink(filepath.Join(bin, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "kubelet"), []byte("#!/bin/sh\necho 'broken kubelet for the test' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := kubecluster.Start(ctx, &kubecluster.Options{BinDir: dir, Kubelet: true, StartTimeout: 3 * time.Minute})
	switch {
	case errors.Is(err, kubecluster.ErrNoContainerd):
		t.Skipf("real node: %v", err)
	case err == nil:
		c.Stop()
		t.Fatal("Start succeeded with a kubelet that exits")
	}
	msg := err.Error()
	if !strings.Contains(msg, "kubelet exited before its node was ready") || !strings.Contains(msg, "broken kubelet for the test") {
		t.Errorf("error does not say the kubelet exited, with its log: %v", err)
	}
	// Stop's own complaints are joined to the error.
	for _, left := range []string{"left", "still accepts", "did not exit", "unmount", "remove cgroup", "restore"} {
		if strings.Contains(msg, left) {
			t.Errorf("the cleanup after the failed start reports %q: %v", left, err)
		}
	}
}

// serverCgroup is the memory cgroup of the process listening on port
// (found by its socket's inode in /proc/net/tcp).
func serverCgroup(t *testing.T, port int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	inode := ""
	want := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 9 && strings.HasSuffix(f[1], want) && f[3] == "0A" { // LISTEN
			inode = f[9]
		}
	}
	if inode == "" {
		t.Fatalf("nothing listens on port %d", port)
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			if l, _ := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); l == "socket:["+inode+"]" {
				cg, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cgroup"))
				for _, line := range strings.Split(string(cg), "\n") {
					if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == "memory" {
						return parts[2]
					}
				}
			}
		}
	}
	t.Fatalf("no process holds the socket listening on port %d", port)
	return ""
}

// pushHello pushes a FROM scratch image of ./testdata/hello to ref.
func pushHello(ctx context.Context, t *testing.T, ref string) string {
	t.Helper()
	bin, err := imagebuild.BuildGo(ctx, "./testdata/hello", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	img, err := imagebuild.Scratch(imagebuild.Image{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := imagebuild.WriteTarball(&buf, ref, img); err != nil {
		t.Fatal(err)
	}
	if _, err := ociregistry.PushTarball(ctx, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil }, ref, nil); err != nil {
		t.Fatal(err)
	}
	return ref
}
