package kubernetes_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/internal/kubecluster"
	"github.com/agentenv/agentenv/internal/kubecluster/kubeclustertest"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/kubernetes"
	"github.com/agentenv/agentenv/runner/sandboxtest"
)

// Tier 2: the provider on a real node (a kubelet on containerd), where
// Pods run and exec reaches them.

// busybox is Debian's busybox-static, the shell and tools of the
// container sandbox image (the provider's file operations are sh, cat,
// stat and tar).
const busybox = "/bin/busybox"

// TestRealNodeSandboxConformance runs the shared sandbox suite's
// container-mode cases on the real node: CopyOut through exec and tar in
// a FROM scratch image of busybox, with symlinks planted by ln -s.
func TestRealNodeSandboxConformance(t *testing.T) {
	if _, err := os.Stat(busybox); err != nil && os.Getenv(kubecluster.EnvBin) != "" {
		t.Skipf("the real-node sandbox image needs %s (Debian's busybox-static): %v", busybox, err)
	}
	c := realNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ref := pushBusybox(ctx, t, c)
	ns := namespace(t, c)
	// A small request: the suite runs several sandboxes at once on a node
	// of the host's cores.
	spec := sandbox.Spec{Mode: sandbox.ModeContainer, Image: ref, CPU: 0.1, MemoryMB: 64, Env: map[string]string{"REALNODE_VAR": "v1"}}
	newProvider := func(t *testing.T) sandbox.Provider {
		p, err := kubernetes.New(kubernetes.Config{Namespace: ns, HostNetwork: true}, &kubernetes.Options{REST: c.REST(c.AdminToken)})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	sandboxtest.RunWith(t, newProvider, &sandboxtest.Options{ContainerSpec: &spec})

	// The suite runs Exec and the file operations in VM mode only; here
	// they run in a container on the node.
	t.Run("ContainerExecAndFiles", func(t *testing.T) {
		p := newProvider(t)
		defer p.Close()
		start := time.Now()
		sb, err := p.CreateSandbox(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("sandbox Running in %v", time.Since(start).Round(10*time.Millisecond))
		defer func() {
			if err := sb.Terminate(context.Background()); err != nil {
				t.Errorf("Terminate: %v", err)
			}
		}()
		res, err := sb.Exec(ctx, []string{"sh", "-c", "echo out; echo err >&2; echo $REALNODE_VAR; exit 3"}, nil)
		if err != nil || res.ExitCode != 3 || string(res.Stdout) != "out\nv1\n" || string(res.Stderr) != "err\n" {
			t.Errorf("Exec = %d %q %q, %v", res.ExitCode, res.Stdout, res.Stderr, err)
		}
		if err := sb.WriteFile(ctx, "/app/x/note.txt", strings.NewReader("hello"), 0o640); err != nil {
			t.Fatal(err)
		}
		if b, err := sb.ReadFile(ctx, "/app/x/note.txt"); err != nil || string(b) != "hello" {
			t.Errorf("ReadFile = %q, %v", b, err)
		}
		if fi, err := sb.Stat(ctx, "/app/x/note.txt"); err != nil || fi.Size() != 5 || fi.Mode().Perm() != 0o640 {
			t.Errorf("Stat = %+v, %v", fi, err)
		}
		if _, err := sb.ReadFile(ctx, "/app/missing"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
		}
	})
	// A published port in port-forward mode: the API server, the kubelet
	// and containerd forward a loopback port to the (host network) Pod.
	t.Run("PortForward", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		p, err := kubernetes.New(kubernetes.Config{Namespace: ns, HostNetwork: true, EndpointMode: kubernetes.EndpointPortForward}, &kubernetes.Options{REST: c.REST(c.AdminToken)})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ps := spec
		ps.Port = port
		sb, err := p.CreateSandbox(ctx, ps)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := sb.Terminate(context.Background()); err != nil {
				t.Errorf("Terminate: %v", err)
			}
		}()
		if err := sb.WriteFile(ctx, "/app/www/index.html", strings.NewReader("through the tunnel"), 0o644); err != nil {
			t.Fatal(err)
		}
		url := sb.(*kubernetes.Sandbox).TunnelURLs()[port]
		if !strings.HasPrefix(url, "http://127.0.0.1:") {
			t.Fatalf("tunnel URL %q", url)
		}
		// Nothing listens yet: the Pod refuses, which drops client-go's
		// forward; a readiness poll does this, and the tunnel must come
		// back once the server listens.
		if resp, err := http.Get(url + "/index.html"); err == nil {
			resp.Body.Close()
			t.Fatalf("GET before the server listens: %s", resp.Status)
		}
		// busybox httpd puts itself in the background once listening.
		if res, err := sb.Exec(ctx, []string{"httpd", "-p", "127.0.0.1:" + strconv.Itoa(port), "-h", "/app/www"}, nil); err != nil || res.ExitCode != 0 {
			t.Fatalf("httpd: %+v, %v", res, err)
		}
		var resp *http.Response
		envdeploytest.Poll(t, func() bool {
			resp, err = http.Get(url + "/index.html")
			return err == nil
		})
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "through the tunnel" {
			t.Errorf("GET through the port-forward: %d %q", resp.StatusCode, body)
		}
	})
}

// TestRealNodeHostNetworkGroup runs two workloads that both listen on the
// echo env's port as one group on the real node: with host_network the
// group plans a node port per workload (passed in MCP_PORT), returns it as
// the workload's internal address, and each answers there, one of them
// also through the port-forward.
func TestRealNodeHostNetworkGroup(t *testing.T) {
	c := realNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := imagebuild.BuildGo(ctx, "github.com/agentenv/agentenv/examples/envs/echo/cmd/echo-env", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := c.PushImage(ctx, "echo-env:v1", imagebuild.Image{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, c)
	p, err := kubernetes.New(kubernetes.Config{Namespace: ns, HostNetwork: true, EndpointMode: kubernetes.EndpointPortForward}, &kubernetes.Options{REST: c.REST(c.AdminToken)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	g, err := p.CreateGroup(ctx, envdeploy.GroupSpec{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := g.Terminate(context.Background()); err != nil {
			t.Errorf("Terminate: %v", err)
		}
	}()
	planned := map[string]string{}
	for i, name := range []string{"alpha", "beta"} {
		w := envdeploy.Workload{Name: name, Role: envdeploy.TypeMCPServer, Source: envdeploy.Source{Ref: ref},
			Port: envdeploy.MCPPort, PortEnv: "MCP_PORT", Publish: i == 0,
			Env: map[string]string{"MCP_HOST": "127.0.0.1", "ENVIRONMENT_NAME": name}}
		planned[name] = g.(envdeploy.AddressPlanner).InternalURL(w)
		start := time.Now()
		ep, err := g.Run(ctx, w)
		if err != nil {
			t.Fatalf("run %s: %v", name, err)
		}
		t.Logf("%s Running in %v at %s", name, time.Since(start).Round(10*time.Millisecond), ep.Internal)
		if ep.Internal != planned[name] {
			t.Errorf("%s runs at %s, planned %s", name, ep.Internal, planned[name])
		}
		urls := []string{ep.Internal}
		if w.Publish {
			urls = append(urls, ep.Host)
		}
		// Running is when the process starts, not when it listens.
		envdeploytest.Poll(t, func() bool {
			resp, err := http.Get(ep.Internal + protocol.EnvCardPath)
			if err == nil {
				resp.Body.Close()
			}
			return err == nil
		})
		for _, u := range urls {
			if body := get(t, u+protocol.EnvCardPath); !strings.Contains(body, name) {
				t.Errorf("%s card at %s does not name it: %s", name, u, body)
			}
		}
	}
	if planned["alpha"] == planned["beta"] {
		t.Errorf("both workloads planned at %s", planned["alpha"])
	}
}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s %s", u, resp.Status, b)
	}
	return string(b)
}

// realNode starts a cluster with a real node for one test, or skips.
func realNode(t *testing.T) *kubecluster.Cluster {
	t.Helper()
	return kubeclustertest.RealNode(t, nil)
}

// pushBusybox pushes a FROM scratch image whose entrypoint is the
// cluster's pause program (a sandbox Pod must keep running) and whose
// /bin holds busybox under the names the provider and the suite run.
func pushBusybox(ctx context.Context, t *testing.T, c *kubecluster.Cluster) string {
	t.Helper()
	pause, err := imagebuild.BuildGo(ctx, "github.com/agentenv/agentenv/internal/kubecluster/pause", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	// Debian's busybox runs its own applets from sh without a PATH
	// lookup; these are the names exec'd directly.
	for _, name := range []string{"busybox", "sh", "cat", "true", "env", "tar", "stat", "ln", "sleep", "httpd"} {
		files["/bin/"+name] = busybox
	}
	ref, err := c.PushImage(ctx, "busybox-sandbox:v1", imagebuild.Image{
		Binary: pause, Entrypoint: "/pause",
		Env:   map[string]string{"PATH": "/bin"},
		Files: files,
		Dirs:  append([]imagebuild.Dir{{Path: "/app", Mode: 0o777}}, imagebuild.DefaultDirs...),
	})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}
