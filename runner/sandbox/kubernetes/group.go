package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentenv/agentenv/runner/envdeploy"
)

// Group is one env instance, agent or sandbox: the objects labelled
// agentenv.io/sandbox=<id>.
type Group struct {
	p      *Provider
	id     string
	labels map[string]string

	// mu guards pullSecret, whether this value has made sure of the
	// group's image pull Secret (ensurePullSecret), and ports, the node
	// ports planned for the workloads (host_network).
	mu         sync.Mutex
	pullSecret bool
	ports      map[string]int
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CreateGroup implements envdeploy.Backend. Nothing is created until Run:
// a group is only a label.
func (p *Provider) CreateGroup(ctx context.Context, s envdeploy.GroupSpec) (envdeploy.Group, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id := s.ID
	if id == "" {
		id = "k8s-" + randHex(4)
	}
	l := maps.Clone(s.Labels)
	if l == nil {
		l = map[string]string{}
	}
	if p.storeID != "" && l[envdeploy.LabelStore] == "" {
		l[envdeploy.LabelStore] = p.storeID
	}
	return &Group{p: p, id: id, labels: l}, nil
}

// OpenGroup implements envdeploy.Backend: the group's labels are read
// back from its first Pod (or Service).
func (p *Provider) OpenGroup(ctx context.Context, id string) (envdeploy.Group, error) {
	sel := metav1.ListOptions{LabelSelector: LabelSandbox + "=" + labelValue(id)}
	pods, err := p.cs.CoreV1().Pods(p.ns).List(ctx, sel)
	if err != nil {
		return nil, p.wrap("list pods of "+id, err)
	}
	for _, pod := range pods.Items {
		l := envLabels(pod.ObjectMeta)
		delete(l, envdeploy.LabelRole)
		return &Group{p: p, id: id, labels: l}, nil
	}
	svcs, err := p.cs.CoreV1().Services(p.ns).List(ctx, sel)
	if err != nil {
		return nil, p.wrap("list services of "+id, err)
	}
	if len(svcs.Items) == 0 {
		return nil, fmt.Errorf("kubernetes: group %s in namespace %s: %w", id, p.ns, envdeploy.ErrNotFound)
	}
	l := envLabels(svcs.Items[0].ObjectMeta)
	delete(l, envdeploy.LabelRole)
	return &Group{p: p, id: id, labels: l}, nil
}

// ID implements envdeploy.Group.
func (g *Group) ID() string { return g.id }

func (g *Group) podName(workload string) string { return objectName(g.id, workload) }

// InternalURL implements envdeploy.AddressPlanner: the Service's name,
// which resolves from every Pod of the namespace; with host_network,
// 127.0.0.1 and the workload's planned port.
func (g *Group) InternalURL(w envdeploy.Workload) string {
	if g.p.cfg.HostNetwork {
		return "http://127.0.0.1:" + strconv.Itoa(g.port(w))
	}
	return "http://" + g.podName(w.Name) + ":" + strconv.Itoa(w.Port)
}

// port is the port workload w listens on: its own, or with host_network
// a port planned once per workload and passed in PortEnv, since the
// group's Pods (and other groups') share the node's ports. The port is
// free on this machine when planned: host_network is for a node on the
// runner's machine (a lone kubelet without a CNI).
func (g *Group) port(w envdeploy.Workload) int {
	if !g.p.cfg.HostNetwork || w.PortEnv == "" || w.Port <= 0 {
		return w.Port
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := g.ports[w.Name]; ok {
		return p
	}
	p := w.Port
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		p = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	if g.ports == nil {
		g.ports = map[string]int{}
	}
	g.ports[w.Name] = p
	return p
}

// Run implements envdeploy.Group: a Secret with the workload's
// environment, a Pod and a Service, then a wait (Config.DeployTimeout at
// most) for the Pod to run. A failure removes what this call created.
func (g *Group) Run(ctx context.Context, w envdeploy.Workload) (envdeploy.Endpoint, error) {
	if w.Source.Ref == "" {
		return envdeploy.Endpoint{}, fmt.Errorf("%w: %s has no image (register it with %s)", envdeploy.ErrImageMissing, w.Source.What, w.Source.PutHint)
	}
	env := maps.Clone(w.Env)
	port := g.port(w)
	if w.PortEnv != "" && port > 0 {
		if env == nil {
			env = map[string]string{}
		}
		env[w.PortEnv] = strconv.Itoa(port)
	}
	if err := validEnvKeys(env); err != nil {
		return envdeploy.Endpoint{}, fmt.Errorf("kubernetes: workload %s: %w", w.Name, err)
	}
	ps := podSpec{name: g.podName(w.Name), gid: g.id, workload: w.Name, kind: w.Role, groupLabels: g.labels,
		env: env, port: port, ttl: g.ttl(), hostNetwork: g.p.cfg.HostNetwork}
	return g.run(ctx, ps, w.Source, w.Publish)
}

// run creates ps's objects, the Pod running src's image, and waits for
// the Pod. The image is pushed and the group's pull Secret made before
// anything of the workload is created, so a failure there leaves nothing.
func (g *Group) run(ctx context.Context, ps podSpec, src envdeploy.Source, publish bool) (envdeploy.Endpoint, error) {
	p := g.p
	image, err := p.podImage(ctx, src)
	if err != nil {
		return envdeploy.Endpoint{}, err
	}
	ps.image = image
	if ps.pullSecret, err = g.ensurePullSecret(ctx); err != nil {
		return envdeploy.Endpoint{}, err
	}
	created := false
	fail := func(err error) (envdeploy.Endpoint, error) {
		if created {
			cctx, cancel := envdeploy.CleanupContext(ctx)
			defer cancel()
			if rerr := g.removeWorkload(cctx, ps.workload); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		return envdeploy.Endpoint{}, err
	}
	if len(ps.env) > 0 {
		if _, err := p.cs.CoreV1().Secrets(p.ns).Create(ctx, ps.secret(), metav1.CreateOptions{}); err != nil {
			return fail(p.wrap("create secret "+ps.name, err))
		}
		created = true
	}
	pod, err := p.cs.CoreV1().Pods(p.ns).Create(ctx, ps.pod(), metav1.CreateOptions{})
	if err != nil {
		return fail(p.wrap("create pod "+ps.name, err))
	}
	created = true
	ep := envdeploy.Endpoint{ID: string(pod.UID)}
	if ps.port > 0 {
		if _, err := p.cs.CoreV1().Services(p.ns).Create(ctx, ps.service(), metav1.CreateOptions{}); err != nil {
			return fail(p.wrap("create service "+ps.name, err))
		}
		ep.Internal = "http://" + ps.name + ":" + strconv.Itoa(ps.port)
		if ps.hostNetwork {
			ep.Internal = "http://127.0.0.1:" + strconv.Itoa(ps.port)
		}
	}
	if err := p.waitRunning(ctx, ps.name); err != nil {
		return fail(err)
	}
	if publish && ps.port > 0 {
		host, err := p.endpoint(ctx, g.id, ps.name, ps.port)
		if err != nil {
			return fail(err)
		}
		ep.Host = host
	}
	return ep, nil
}

// ttl is the time left before the group's expiry label, for
// activeDeadlineSeconds; 0 when the group has none.
func (g *Group) ttl() time.Duration {
	exp, err := strconv.ParseInt(g.labels[envdeploy.LabelExpires], 10, 64)
	if err != nil {
		return 0
	}
	return max(time.Until(time.Unix(exp, 0)), time.Second)
}

// Logs implements envdeploy.Group.
func (g *Group) Logs(ctx context.Context, name string, lines int) string {
	n := int64(lines)
	b, err := g.p.cs.CoreV1().Pods(g.p.ns).GetLogs(g.podName(name), &corev1.PodLogOptions{TailLines: &n}).DoRaw(ctx)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(b)
}

// Exited implements envdeploy.ExitWatcher: a Pod that failed, finished,
// or whose container is terminated or cannot start.
func (g *Group) Exited(ctx context.Context) (string, bool) {
	pods, err := g.p.cs.CoreV1().Pods(g.p.ns).List(ctx, metav1.ListOptions{LabelSelector: LabelSandbox + "=" + labelValue(g.id)})
	if err != nil {
		return "", false
	}
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
			return pod.Labels[LabelWorkload], true
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.State.Terminated != nil {
				return pod.Labels[LabelWorkload], true
			}
		}
	}
	return "", false
}

// Terminate implements envdeploy.Group: everything labelled with the
// group is deleted (Pods without grace: a sandbox is discarded, not
// drained). Missing objects are not an error, so it is idempotent.
func (g *Group) Terminate(ctx context.Context) error {
	g.p.stopForwards(g.id)
	return g.p.deleteByLabel(ctx, LabelSandbox+"="+labelValue(g.id))
}

// removeWorkload deletes the objects of workload name (a failed Run).
func (g *Group) removeWorkload(ctx context.Context, name string) error {
	return g.p.deleteByLabel(ctx, LabelSandbox+"="+labelValue(g.id)+","+LabelWorkload+"="+labelValue(name))
}

// deleteByLabel deletes the Pods, Services, Secrets and NetworkPolicies
// matching sel.
func (p *Provider) deleteByLabel(ctx context.Context, sel string) error {
	zero := int64(0)
	opts := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	list := metav1.ListOptions{LabelSelector: sel}
	var errs []error
	keep := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, p.wrap("delete "+what+" "+sel, err))
		}
	}
	core := p.cs.CoreV1()
	keep("pods", core.Pods(p.ns).DeleteCollection(ctx, opts, list))
	// Services have no deletecollection verb: one by one.
	svcs, err := core.Services(p.ns).List(ctx, list)
	keep("services", err)
	if err == nil {
		for _, s := range svcs.Items {
			keep("service", core.Services(p.ns).Delete(ctx, s.Name, opts))
		}
	}
	keep("secrets", core.Secrets(p.ns).DeleteCollection(ctx, opts, list))
	// NetworkPolicies exist only where the config says they are enforced;
	// elsewhere the account need not be granted them.
	if p.cfg.NetworkPolicyEnforced {
		keep("networkpolicies", p.cs.NetworkingV1().NetworkPolicies(p.ns).DeleteCollection(ctx, opts, list))
	}
	return errors.Join(errs...)
}
