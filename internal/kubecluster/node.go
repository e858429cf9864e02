package kubecluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/registry/ociregistry"
)

// NodeName is the name the real node (Options.Kubelet) registers under.
const NodeName = "agentenv-node"

// ErrNoContainerd is returned by Start when Options.Kubelet is set but the
// host cannot run the node: no containerd, runc or ctr, not root, or a
// containerd that does not come up. Tests turn it into a skip.
var ErrNoContainerd = errors.New("kubecluster: containerd cannot run here")

// Host programs of the real node: Debian's containerd and runc packages.
var (
	containerdBin = "containerd"
	ctrBin        = "ctr"
	runcBin       = "runc"
)

// kernelTunables are the sysctls the kubelet sets at start (it has no
// option to leave them alone other than refusing to start when they
// differ); Stop puts back the values it found.
var kernelTunables = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

// node is the state of the real node: what Stop must undo beyond the
// processes (which are in Cluster.procs like the others).
type node struct {
	registry   *ociregistry.Server
	sock       string // containerd's socket
	runcRoot   string
	cgroupRoot string // relative to each cgroup v1 hierarchy
	sysctls    map[string]string
	// logsDirMade: /var/log/containers did not exist before the
	// kubelet (which hard-codes it) made it.
	logsDirMade bool
	// libDirMade: nor did /var/lib/kubelet, where the kubelet's device
	// manager puts its socket whatever its root folder.
	libDirMade bool
}

// Paths the kubelet uses whatever its configuration says.
const (
	containerLogLinks = "/var/log/containers"
	kubeletLibDir     = "/var/lib/kubelet"
	deviceSocket      = "/var/lib/kubelet/device-plugins/kubelet.sock"
)

// nodeLock is an abstract unix socket (no file; released when its
// process dies) held by the one real node of the host at a time. Two
// kubelets would share what the kubelet does not let its configuration
// move (/var/lib/kubelet/device-plugins, the kernel tunables), and a second
// node would record the first one's tunables as the host's and put them
// back at its Stop.
const nodeLock = "@agentenv-kubecluster-node"

// lockNode waits, up to ctx, for the host's real-node lock.
func lockNode(ctx context.Context) (net.Listener, error) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		l, err := net.Listen("unix", nodeLock)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("kubecluster: node lock: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kubecluster: waiting for another real node of this host to stop: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// checkContainerd reports whether the host can run the real node.
func checkContainerd() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: the kubelet and containerd need root", ErrNoContainerd)
	}
	for _, b := range []*string{&containerdBin, &ctrBin, &runcBin} {
		p, err := exec.LookPath(*b)
		if err != nil {
			return fmt.Errorf("%w: %v (install Debian's containerd and runc)", ErrNoContainerd, err)
		}
		*b = p
	}
	return nil
}

// startNode starts the in-process registry holding the pause image, a
// private containerd and the kubelet, and waits for the node to be Ready.
func (c *Cluster) startNode(ctx context.Context, cs k8s.Interface) error {
	// The cgroup folder is named before anything can fail: Stop removes
	// the tree under it, so it must never be empty (a hierarchy's root).
	n := &node{sysctls: map[string]string{}, cgroupRoot: "/" + filepath.Base(c.Dir)}
	c.node = n
	reg, err := ociregistry.Start("127.0.0.1:0", filepath.Join(c.Dir, "registry"), &ociregistry.Options{Logger: c.opt.Logger})
	if err != nil {
		return fmt.Errorf("kubecluster: %w", err)
	}
	n.registry = reg
	c.Registry = reg.Addr()
	pause, err := c.pushPause(ctx)
	if err != nil {
		return err
	}
	cd := filepath.Join(c.Dir, "containerd")
	n.sock = filepath.Join(cd, "containerd.sock")
	n.runcRoot = filepath.Join(cd, "runc")
	for _, d := range []string{filepath.Join(cd, "cni", "net.d"), filepath.Join(cd, "cni", "bin")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("kubecluster: %w", err)
		}
	}
	registries := append([]string{c.Registry}, c.opt.PlainHTTPRegistries...)
	if err := os.WriteFile(filepath.Join(cd, "config.toml"), []byte(containerdConfig(cd, n.sock, n.runcRoot, pause, registries)), 0o600); err != nil {
		return fmt.Errorf("kubecluster: %w", err)
	}
	// The CRI plugin reports the network not ready, and the kubelet the
	// node NotReady, until it has loaded a CNI network. Pods here are
	// hostNetwork only, so the network is never set up: this one only
	// tells the CRI plugin that the node's (host) network is ready.
	if err := os.WriteFile(filepath.Join(cd, "cni", "net.d", "10-hostnetwork.conflist"), []byte(`{"cniVersion": "0.4.0", "name": "hostnetwork-only", "plugins": [{"type": "loopback"}]}`), 0o600); err != nil {
		return fmt.Errorf("kubecluster: %w", err)
	}
	if err := c.start("containerd", containerdBin, "--config", filepath.Join(cd, "config.toml"), "--log-level", "info"); err != nil {
		return err
	}
	if err := c.waitContainerd(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrNoContainerd, err)
	}
	return c.startKubelet(ctx, cs)
}

// pushPause builds the pause program and pushes it as <registry>/pause:v1.
func (c *Cluster) pushPause(ctx context.Context) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	bin, err := imagebuild.BuildGo(ctx, "./pause", filepath.Join(c.Dir, "build"), &imagebuild.GoOptions{Dir: filepath.Dir(file)})
	if err != nil {
		return "", fmt.Errorf("kubecluster: pause image: %w", err)
	}
	return c.PushImage(ctx, "pause:v1", imagebuild.Image{Binary: bin, Dirs: []imagebuild.Dir{}})
}

// PushImage pushes a FROM scratch image to the node's registry as name
// ("echo:v1") and returns the reference Pods use (by tag: the kubelet
// pulls from the registry the first time).
func (c *Cluster) PushImage(ctx context.Context, name string, im imagebuild.Image) (string, error) {
	if c.node == nil {
		return "", errors.New("kubecluster: PushImage needs the real node (Options.Kubelet)")
	}
	img, err := imagebuild.Scratch(im)
	if err != nil {
		return "", fmt.Errorf("kubecluster: image %s: %w", name, err)
	}
	ref := c.Registry + "/" + name
	var buf bytes.Buffer
	if err := imagebuild.WriteTarball(&buf, ref, img); err != nil {
		return "", fmt.Errorf("kubecluster: image %s: %w", name, err)
	}
	b := buf.Bytes()
	if _, err := ociregistry.PushTarball(ctx, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, ref, nil); err != nil {
		return "", fmt.Errorf("kubecluster: %w", err)
	}
	return ref, nil
}

// containerdConfig is a containerd 1.6 configuration whose every path is
// under dir, so it shares nothing with another containerd on the host
// (Docker's): root, state, socket, runc's state root, CNI folders.
func containerdConfig(dir, sock, runcRoot, pause string, plainHTTP []string) string {
	var mirrors strings.Builder
	for _, r := range plainHTTP {
		// The registries on 127.0.0.1 speak plain HTTP.
		fmt.Fprintf(&mirrors, "  [plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.%q]\n    endpoint = [%q]\n", r, "http://"+r)
	}
	return fmt.Sprintf(`version = 2
root = %q
state = %q
# opt would create /opt/containerd; the other snapshotters and tracing are unused.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # Containers must not get a lower oom_score_adj than containerd itself
  # may set (which fails in containers and on some hosts).
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %q
        Root = %q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
%s`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, pause, runcBin, runcRoot,
		filepath.Join(dir, "cni", "bin"), filepath.Join(dir, "cni", "net.d"), mirrors.String())
}

// waitContainerd waits until containerd answers on its socket (ctr
// version), or exits.
func (c *Cluster) waitContainerd(ctx context.Context) error {
	p := c.procs[len(c.procs)-1]
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := c.ctr(ctx, "version"); err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("containerd exited while starting; log tail:\n%s", c.logTail("containerd", 20))
		case <-ctx.Done():
			return fmt.Errorf("containerd not ready: %w; log tail:\n%s", ctx.Err(), c.logTail("containerd", 20))
		case <-tick.C:
		}
	}
}

// ctr runs Debian's ctr against the private containerd, in the
// namespace the CRI plugin uses.
func (c *Cluster) ctr(ctx context.Context, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, ctrBin, append([]string{"--address", c.node.sock, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// startKubelet writes the kubelet's configuration and starts it.
func (c *Cluster) startKubelet(ctx context.Context, cs k8s.Interface) error {
	n := c.node
	for _, s := range kernelTunables {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			n.sysctls[s] = strings.TrimSpace(string(b))
		}
	}
	if _, err := os.Stat(containerLogLinks); errors.Is(err, os.ErrNotExist) {
		n.logsDirMade = true
	}
	if _, err := os.Stat(kubeletLibDir); errors.Is(err, os.ErrNotExist) {
		n.libDirMade = true
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	c.ports = append(c.ports, ports...)
	if err := makeCgroupRoot(n.cgroupRoot); err != nil {
		return err
	}
	kd := filepath.Join(c.Dir, "kubelet")
	if err := os.MkdirAll(kd, 0o700); err != nil {
		return fmt.Errorf("kubecluster: %w", err)
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
# The API server reaches the kubelet (exec, logs) on 127.0.0.1 only and
# holds no kubelet client certificate: no authentication there.
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://%s
# cgroup v1 hosts: the kubelet refuses them unless told not to.
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
# The kubepods hierarchy, and so every Pod's and container's cgroup, goes
# under one folder of the cluster's own, which Stop removes. (Without
# cgroupsPerQOS the kubelet passes no parent and containerd puts them in
# a host-wide /k8s.io.)
cgroupsPerQOS: true
cgroupRoot: %s
enforceNodeAllocatable: []
makeIPTablesUtilChains: false
podLogsDir: %s
volumePluginDir: %s
serializeImagePulls: false
nodeStatusUpdateFrequency: 2s
nodeStatusReportFrequency: 10s
`, ports[0], ports[1], n.sock, n.cgroupRoot, filepath.Join(kd, "pod-logs"), filepath.Join(kd, "volume-plugins"))
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: kubelet
  user: {token: %q}
contexts:
- name: c
  context: {cluster: c, user: kubelet}
current-context: c
`, c.URL, c.nodeToken)
	for name, data := range map[string]string{"config.yaml": cfg, "kubeconfig": kc} {
		if err := os.WriteFile(filepath.Join(kd, name), []byte(data), 0o600); err != nil {
			return fmt.Errorf("kubecluster: %w", err)
		}
	}
	if err := c.start("kubelet", filepath.Join(c.opt.BinDir, "kubelet"),
		"--config="+filepath.Join(kd, "config.yaml"),
		"--kubeconfig="+filepath.Join(kd, "kubeconfig"),
		"--root-dir="+filepath.Join(kd, "root"),
		"--cert-dir="+filepath.Join(kd, "pki"),
		"--hostname-override="+NodeName,
		"--node-ip=127.0.0.1",
		"--v=1"); err != nil {
		return err
	}
	c.Nodes = []string{NodeName}
	if err := c.waitNodeReady(ctx, cs); err != nil {
		return err
	}
	// The kubelet refuses a loopback node IP and so publishes no address
	// (it logs the refusal at every status update and leaves the
	// addresses alone): without one the API server cannot reach it for
	// exec, logs or port-forward. The kubelet listens on 127.0.0.1 only.
	addrs := fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"},{"type":"Hostname","address":%q}]}}`, NodeName)
	if _, err := cs.CoreV1().Nodes().Patch(ctx, NodeName, types.MergePatchType, []byte(addrs), metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("kubecluster: set the node's address: %w", err)
	}
	// The kubelet only warns about fields it does not know; a misspelt
	// one would leave a default such as /var/log/pods in place.
	if b, err := os.ReadFile(filepath.Join(c.Dir, "kubelet.log")); err == nil && bytes.Contains(b, []byte("unknown field")) {
		return fmt.Errorf("kubecluster: the kubelet ignored part of its configuration; log tail:\n%s", c.logTail("kubelet", 30))
	}
	return nil
}

// waitNodeReady waits for the kubelet's node to be Ready, or the
// kubelet to exit.
func (c *Cluster) waitNodeReady(ctx context.Context, cs k8s.Interface) error {
	p := c.procs[len(c.procs)-1]
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if nd, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{}); err == nil {
			for _, cond := range nd.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("kubecluster: kubelet exited before its node was ready; log tail:\n%s", c.logTail("kubelet", 30))
		case <-ctx.Done():
			return fmt.Errorf("kubecluster: node %s not ready: %w; kubelet log tail:\n%s", NodeName, ctx.Err(), c.logTail("kubelet", 30))
		case <-tick.C:
		}
	}
}

// stopNodeRuntime runs once the kubelet has exited, containerd still
// running: it removes every task and container of the CRI namespace
// through containerd (so the shims exit and remove their sockets), then
// kills and deletes whatever runc still lists under the node's runc root,
// then kills any shim left by its PID.
func (c *Cluster) stopNodeRuntime(containerdRunning bool) []error {
	n := c.node
	if n.sock == "" || n.runcRoot == "" {
		return nil // containerd was never configured
	}
	var errs []error
	ctx := context.Background()
	var ids []string
	if containerdRunning {
		// A removal may fail because the CRI plugin, seeing a Pod's
		// sandbox die, removed the task first: what counts is what is
		// left after.
		if out, err := c.ctr(ctx, "tasks", "ls", "-q"); err == nil {
			ids = strings.Fields(out)
			for _, id := range ids {
				_, _ = c.ctr(ctx, "tasks", "rm", "-f", id)
			}
		}
		if out, err := c.ctr(ctx, "containers", "ls", "-q"); err == nil {
			for _, id := range strings.Fields(out) {
				_, _ = c.ctr(ctx, "containers", "rm", id)
			}
		}
		for _, what := range []string{"tasks", "containers"} {
			if out, err := c.ctr(ctx, what, "ls", "-q"); err == nil && strings.TrimSpace(out) != "" {
				errs = append(errs, fmt.Errorf("kubecluster: containerd %s left after removal: %s", what, strings.Join(strings.Fields(out), " ")))
			}
		}
	}
	// A containerd that died leaves its containers to runc.
	root := filepath.Join(n.runcRoot, "k8s.io")
	if out, err := exec.Command(runcBin, "--root", root, "list", "-q").Output(); err == nil {
		for _, id := range strings.Fields(string(out)) {
			ids = append(ids, id)
			_ = exec.Command(runcBin, "--root", root, "kill", id, "KILL").Run()
			if out, err := exec.Command(runcBin, "--root", root, "delete", "-f", id).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("kubecluster: runc delete %s: %w: %s", id, err, bytes.TrimSpace(out)))
			}
		}
	}
	// Shims name containerd's socket on their command line.
	for _, pid := range processesUnder(n.sock) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// A shim killed rather than shut down leaves its socket, named by a
	// hash of containerd's address, the namespace and the task, in
	// containerd's fixed /run/containerd/s.
	for _, id := range ids {
		h := sha256.Sum256([]byte(filepath.Join(n.sock, "k8s.io", id)))
		_ = os.Remove(filepath.Join("/run/containerd/s", fmt.Sprintf("%x", h)))
	}
	return errs
}

// cleanupNodeHost undoes what the node did to the host outside the
// cluster's folder, once every process has exited: mounts under the
// folder, the Pods' cgroups, the kubelet's /var/log/containers links and
// the kernel tunables it changed.
func (c *Cluster) cleanupNodeHost() []error {
	n := c.node
	var errs []error
	if err := unmountUnder(c.Dir); err != nil {
		errs = append(errs, err)
	}
	hier, _ := os.ReadDir("/sys/fs/cgroup")
	if !strings.HasPrefix(n.cgroupRoot, "/agentenv-kube-") {
		// Never a hierarchy's root or another's folder.
		hier = nil
	}
	for _, h := range hier {
		if err := removeCgroupTree(filepath.Join("/sys/fs/cgroup", h.Name(), n.cgroupRoot)); err != nil {
			errs = append(errs, err)
		}
	}
	if links, err := os.ReadDir(containerLogLinks); err == nil {
		for _, l := range links {
			p := filepath.Join(containerLogLinks, l.Name())
			if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, c.Dir+"/") {
				_ = os.Remove(p)
			}
		}
		if n.logsDirMade {
			_ = os.Remove(containerLogLinks) // only if empty
		}
	}
	if n.libDirMade {
		// Another kubelet may have started since: each removal is
		// only of what is empty or ours.
		_ = os.Remove(deviceSocket)
		_ = os.Remove(filepath.Dir(deviceSocket))
		_ = os.Remove(kubeletLibDir)
	}
	for s, v := range n.sysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil && strings.TrimSpace(string(b)) != v {
			if err := os.WriteFile("/proc/sys/"+s, []byte(v), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("kubecluster: restore %s: %w", s, err))
			}
		}
	}
	if n.registry != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := n.registry.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("kubecluster: registry: %w", err))
		}
		cancel()
	}
	if left := processesInCgroup(n.cgroupRoot); len(hier) > 0 && len(left) > 0 {
		errs = append(errs, fmt.Errorf("kubecluster: container processes left in cgroup %s: %v", n.cgroupRoot, left))
	}
	return errs
}

// unmountUnder detaches every mount point under dir, deepest first
// (shm and rootfs mounts of the sandboxes, the kubelet's volumes).
func unmountUnder(dir string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("kubecluster: %w", err)
	}
	var mps []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(unescapeMount(f[4]), dir+"/") {
			mps = append(mps, unescapeMount(f[4]))
		}
	}
	sort.Slice(mps, func(i, j int) bool { return len(mps[i]) > len(mps[j]) })
	var errs []error
	for _, mp := range mps {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("kubecluster: unmount %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				out.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		out.WriteByte(s[i])
	}
	return out.String()
}

// makeCgroupRoot creates the cgroup folder root in every hierarchy (the
// kubelet requires its cgroupRoot to exist). A new cpuset starts with no
// CPUs or memory nodes: it gets its parent's.
func makeCgroupRoot(root string) error {
	hier, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return fmt.Errorf("kubecluster: %w", err)
	}
	for _, h := range hier {
		d := filepath.Join("/sys/fs/cgroup", h.Name(), root)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("kubecluster: cgroup %s: %w", d, err)
		}
		if h.Name() == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(filepath.Dir(d), f))
				if err == nil {
					err = os.WriteFile(filepath.Join(d, f), b, 0o644)
				}
				if err != nil {
					return fmt.Errorf("kubecluster: cgroup %s: %w", d, err)
				}
			}
		}
	}
	return nil
}

// removeCgroupTree removes a cgroup folder and its children, deepest
// first (a cgroup folder is removed with rmdir, never its files).
func removeCgroupTree(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	var errs []error
	for _, d := range dirs {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("kubecluster: remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// processesInCgroup lists the pids whose cgroup path names root (the
// containers' processes, which name nothing of the cluster's folder).
func processesInCgroup(root string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cgroup")
		if bytes.Contains(b, []byte(":"+root+"/")) || bytes.Contains(b, []byte(":"+root+"\n")) {
			out = append(out, pid)
		}
	}
	return out
}
