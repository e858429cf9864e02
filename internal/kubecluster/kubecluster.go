package kubecluster

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// EnvBin names the folder holding kube-apiserver, etcd, kwok and
// kwok-stages.yaml (integration/kube/build.sh prints it).
const EnvBin = "AGENTENV_KUBE_BIN"

// ErrNoBinaries is returned by Start when EnvBin is unset or incomplete.
var ErrNoBinaries = errors.New("kubernetes test binaries not found")

// UserName is the RBAC user of UserToken.
const UserName = "agentenv-user"

// Options tunes Start; nil means defaults.
type Options struct {
	// BinDir holds the binaries; "" reads $AGENTENV_KUBE_BIN.
	BinDir string
	// Nodes is the number of kwok fake nodes (default 2).
	Nodes int
	// NoBindImagePrefix: Pods whose first container's image starts with
	// it are never bound to a node ("" = every Pod is bound).
	NoBindImagePrefix string
	// Logger receives the processes' output lines at debug level.
	Logger *slog.Logger
	// StartTimeout bounds Start (default 2 minutes: a cold API server
	// takes tens of seconds on a loaded machine).
	StartTimeout time.Duration
	// Kubelet runs one real node instead of kwok's fake ones (Nodes is
	// then ignored): a kubelet from BinDir on a private containerd
	// (Debian's containerd and runc), Pods hostNetwork only, images
	// pulled from the cluster's own in-process registry (Registry). It
	// needs root; Start returns ErrNoContainerd where containerd cannot
	// run and ErrNoBinaries when BinDir has no kubelet.
	Kubelet bool
	// PlainHTTPRegistries are further registries ("127.0.0.1:5000") the
	// node pulls from over plain HTTP, beside Registry.
	PlainHTTPRegistries []string
}

// Cluster is a running control plane.
type Cluster struct {
	// Dir is the cluster's folder (etcd data, certificates, logs).
	Dir string
	// URL is the API server's address (https, self-signed).
	URL        string
	AdminToken string
	UserToken  string
	// Nodes are the fake nodes' names, or NodeName with Options.Kubelet.
	Nodes []string
	// Registry is the node's in-process OCI registry ("127.0.0.1:port",
	// plain HTTP) with Options.Kubelet; PushImage pushes to it.
	Registry string

	node      *node
	nodeToken string
	nodeLock  net.Listener

	opt      Options
	ports    []int
	procs    []*proc
	stopBind context.CancelFunc
	bindDone chan struct{}
	// binds counts the bind calls made (scale figures tell them apart
	// from the provider's calls).
	mu    sync.Mutex
	binds int
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

// Start starts etcd, kube-apiserver and kwok, creates the fake nodes and
// starts binding Pods. On failure everything started is stopped.
func Start(ctx context.Context, o *Options) (c *Cluster, err error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.BinDir == "" {
		opt.BinDir = os.Getenv(EnvBin)
	}
	if opt.Nodes <= 0 {
		opt.Nodes = 2
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.StartTimeout <= 0 {
		opt.StartTimeout = 2 * time.Minute
	}
	if opt.BinDir == "" {
		return nil, fmt.Errorf("%w: set %s to the folder integration/kube/build.sh prints", ErrNoBinaries, EnvBin)
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kwok", "kwok-stages.yaml"} {
		if _, err := os.Stat(filepath.Join(opt.BinDir, b)); err != nil {
			return nil, fmt.Errorf("%w: %s: %v (run integration/kube/build.sh)", ErrNoBinaries, EnvBin, err)
		}
	}
	if opt.Kubelet {
		if _, err := os.Stat(filepath.Join(opt.BinDir, "kubelet")); err != nil {
			return nil, fmt.Errorf("%w: %s: %v (run integration/kube/build.sh kubelet)", ErrNoBinaries, EnvBin, err)
		}
		if err := checkContainerd(); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opt.StartTimeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "agentenv-kube-")
	if err != nil {
		return nil, fmt.Errorf("kubecluster: %w", err)
	}
	c = &Cluster{Dir: dir, opt: opt, AdminToken: token(), UserToken: token(), nodeToken: token()}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
			c = nil
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return c, err
	}
	c.ports = ports
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	if err := c.start("etcd", filepath.Join(opt.BinDir, "etcd"),
		"--name=default", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return c, err
	}
	if err := c.waitHTTP(ctx, "etcd", etcdURL+"/health", ""); err != nil {
		return c, err
	}
	if err := c.writeFiles(); err != nil {
		return c, err
	}
	c.URL = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	if err := c.start("kube-apiserver", filepath.Join(opt.BinDir, "kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-key-file="+filepath.Join(dir, "sa.pem"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.pem"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.96.0.0/16",
		// No controller-manager keeps the kubernetes Service's
		// endpoints: nothing to reconcile.
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		// exec, logs and port-forward reach the kubelet at its node's
		// address: 127.0.0.1, not its name (which resolves nowhere).
		"--kubelet-preferred-address-types=InternalIP,Hostname"); err != nil {
		return c, err
	}
	if err := c.waitHTTP(ctx, "kube-apiserver", c.URL+"/readyz", c.AdminToken); err != nil {
		return c, err
	}
	cs, err := k8s.NewForConfig(c.REST(c.AdminToken))
	if err != nil {
		return c, fmt.Errorf("kubecluster: %w", err)
	}
	if opt.Kubelet {
		if c.nodeLock, err = lockNode(ctx); err != nil {
			return c, err
		}
		if err := c.startNode(ctx, cs); err != nil {
			return c, err
		}
	} else if err := c.startKwok(ctx, cs); err != nil {
		return c, err
	}
	bctx, stop := context.WithCancel(context.Background())
	c.stopBind, c.bindDone = stop, make(chan struct{})
	go c.bindLoop(bctx, cs)
	return c, nil
}

// startKwok starts kwok and creates its fake nodes.
func (c *Cluster) startKwok(ctx context.Context, cs k8s.Interface) error {
	opt, dir := c.opt, c.Dir
	if err := c.start("kwok", filepath.Join(opt.BinDir, "kwok"),
		"--kubeconfig="+filepath.Join(dir, "kubeconfig"),
		"--config="+filepath.Join(opt.BinDir, "kwok-stages.yaml"), "--config="+filepath.Join(dir, "kwok-deadline.yaml"),
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--cidr=10.244.0.1/16", "--node-ip=127.0.0.1",
		"--server-address=127.0.0.1:0", "--node-lease-duration-seconds=0"); err != nil {
		return err
	}
	if err := c.createNodes(ctx, cs); err != nil {
		return err
	}
	return c.waitNodesReady(ctx, cs)
}

func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// freePorts reserves n loopback ports by listening and closing.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("kubecluster: free port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// writeFiles writes the token file, the service account key and the
// admin kubeconfig kwok uses.
func (c *Cluster) writeFiles() error {
	tokens := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n%s,%s,%s,\n", c.AdminToken, c.UserToken, UserName, UserName)
	if c.opt.Kubelet {
		// The real node's kubelet. Without the Node authorizer (and the
		// controllers it relies on) a kubelet's own RBAC role does not
		// let it read the Pods bound to it: it is an admin.
		tokens += fmt.Sprintf("%s,system:node:%s,system:node:%s,\"system:nodes,system:masters\"\n", c.nodeToken, NodeName, NodeName)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("kubecluster: %w", err)
	}
	// SEC 1 ("EC PRIVATE KEY"): kube-apiserver's --service-account-key-file
	// finds no public key in a PKCS #8 "PRIVATE KEY" block.
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("kubecluster: %w", err)
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %q}
contexts:
- name: c
  context: {cluster: c, user: admin}
current-context: c
`, c.ports[2], c.AdminToken)
	for name, data := range map[string][]byte{
		"tokens.csv": []byte(tokens),
		"sa.pem":     pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
		"kubeconfig": []byte(kc),
		// kwok plays the kubelet's activeDeadlineSeconds too.
		"kwok-deadline.yaml": []byte(deadlineStage),
	} {
		if err := os.WriteFile(filepath.Join(c.Dir, name), data, 0o600); err != nil {
			return fmt.Errorf("kubecluster: %w", err)
		}
	}
	return nil
}

// deadlineStage is a kwok Stage doing what the kubelet does at a Pod's
// activeDeadlineSeconds: it fails the Pod with reason DeadlineExceeded.
// kwok's own stages have none. The delay runs from when kwok sees the Pod
// Running, which is when the kubelet starts counting too (startTime).
const deadlineStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-active-deadline
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.spec.activeDeadlineSeconds'
      operator: 'Exists'
  delay:
    durationFrom:
      jq:
        expression: '(.spec.activeDeadlineSeconds | tostring) + "s"'
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 137
            finishedAt: {{ $now | Quote }}
            reason: Error
      {{ end }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: Ready
      phase: Failed
      reason: DeadlineExceeded
      message: "Pod was active on the node longer than the specified deadline"
`

// Kubeconfig is the path of an admin kubeconfig for the cluster.
func (c *Cluster) Kubeconfig() string { return filepath.Join(c.Dir, "kubeconfig") }

// REST is a client config authenticating with token. The serving
// certificate is self-signed: TLS is not verified.
func (c *Cluster) REST(token string) *rest.Config {
	return &rest.Config{Host: c.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 200, Burst: 400}
}

// start runs bin with args, its output in <Dir>/<name>.log.
func (c *Cluster) start(name, bin string, args ...string) error {
	lf, err := os.Create(filepath.Join(c.Dir, name+".log"))
	if err != nil {
		return fmt.Errorf("kubecluster: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Dir = c.Dir
	// Its own process group: a stray child is killed with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("kubecluster: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: lf}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.procs = append(c.procs, p)
	c.opt.Logger.Debug("started", "name", name, "pid", cmd.Process.Pid)
	return nil
}

// waitHTTP polls url until it answers 200, the process exits (its log
// tail is returned) or ctx ends. Polling is the only way to learn that a
// server is up; the interval is short and bounded by ctx.
func (c *Cluster) waitHTTP(ctx context.Context, name, url, bearer string) error {
	p := c.procs[len(c.procs)-1]
	cl := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer cl.CloseIdleConnections()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		if resp, err := cl.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("kubecluster: %s exited while starting; log tail:\n%s", name, c.logTail(name, 20))
		case <-ctx.Done():
			return fmt.Errorf("kubecluster: %s not ready: %w; log tail:\n%s", name, ctx.Err(), c.logTail(name, 20))
		case <-tick.C:
		}
	}
}

// logTail is the last n lines of a process's log.
func (c *Cluster) logTail(name string, n int) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, name+".log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// createNodes creates the fake nodes kwok manages.
func (c *Cluster) createNodes(ctx context.Context, cs k8s.Interface) error {
	for i := range c.opt.Nodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        "kwok-node-" + strconv.Itoa(i),
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": "kwok-node-" + strconv.Itoa(i)},
		}}
		if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("kubecluster: create node: %w", err)
		}
		c.Nodes = append(c.Nodes, n.Name)
	}
	return nil
}

// waitNodesReady waits for kwok to mark every fake node Ready: until then
// it does not run the Pods bound to them, and a kwok that cannot start
// (a bad flag, a stage it cannot parse) shows here, with its log, rather
// than as a test waiting out its deploy timeout.
func (c *Cluster) waitNodesReady(ctx context.Context, cs k8s.Interface) error {
	kwok := c.procs[len(c.procs)-1]
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			ready := 0
			for _, n := range nodes.Items {
				for _, cond := range n.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			if ready == len(c.Nodes) {
				return nil
			}
		}
		select {
		case <-kwok.done:
			return fmt.Errorf("kubecluster: kwok exited before the nodes were ready; log tail:\n%s", c.logTail("kwok", 20))
		case <-ctx.Done():
			return fmt.Errorf("kubecluster: fake nodes not ready: %w; kwok log tail:\n%s", ctx.Err(), c.logTail("kwok", 20))
		case <-tick.C:
		}
	}
}

// CreateNamespace creates namespace name with its default ServiceAccount
// (no controller-manager creates it; the ServiceAccount admission plugin
// refuses Pods without it).
func (c *Cluster) CreateNamespace(ctx context.Context, name string) error {
	cs, err := k8s.NewForConfig(c.REST(c.AdminToken))
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kubecluster: create namespace %s: %w", name, err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kubecluster: create default service account in %s: %w", name, err)
	}
	return nil
}

// Stop stops the processes (SIGTERM, then SIGKILL after 10 s) in reverse
// order, by PID, and checks that nothing is left: each process has exited,
// no process runs from the cluster's folder, no port still accepts, and
// the folder is removed. It is idempotent.
func (c *Cluster) Stop() error {
	if c == nil {
		return nil
	}
	if c.stopBind != nil {
		c.stopBind()
		<-c.bindDone
		c.stopBind = nil
	}
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		if p.name == "containerd" {
			// The kubelet has exited: remove the containers while
			// containerd can still shut their shims down.
			running := true
			select {
			case <-p.done:
				running = false // ctr would wait out its timeout
			default:
			}
			errs = append(errs, c.stopNodeRuntime(running)...)
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			select {
			case <-p.done:
			case <-time.After(5 * time.Second):
				errs = append(errs, fmt.Errorf("kubecluster: %s (pid %d) did not exit", p.name, p.cmd.Process.Pid))
			}
		}
		// Anything left in its process group (there should be none).
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.log.Close()
	}
	c.procs = nil
	if c.node != nil {
		errs = append(errs, c.cleanupNodeHost()...)
		c.node = nil
	}
	if c.nodeLock != nil {
		c.nodeLock.Close()
		c.nodeLock = nil
	}
	if left := processesUnder(c.Dir); len(left) > 0 {
		errs = append(errs, fmt.Errorf("kubecluster: processes left running from %s: %v", c.Dir, left))
	}
	for _, port := range c.ports {
		if conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
			conn.Close()
			errs = append(errs, fmt.Errorf("kubecluster: port %d still accepts connections", port))
		}
	}
	if c.Dir != "" {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, fmt.Errorf("kubecluster: %w", err))
		}
	}
	return errors.Join(errs...)
}

// processesUnder lists the pids of processes whose command line or
// working folder names dir.
func processesUnder(dir string) []int {
	if dir == "" {
		return nil // every command line "contains" it
	}
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		cwd, _ := os.Readlink("/proc/" + e.Name() + "/cwd")
		if bytes.Contains(cmdline, []byte(dir)) || cwd == dir {
			out = append(out, pid)
		}
	}
	return out
}

// LogTail is the tail of one process's log ("etcd", "kube-apiserver",
// "kwok"), for test failure messages.
func (c *Cluster) LogTail(name string, lines int) string {
	return c.logTail(name, lines)
}
