package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// The deploy_sandbox provider: a container-mode sandbox is a group with
// one workload, "main", whose Pod runs Spec.Image. Files and commands go
// through the API server's exec.

const mainWorkload = "main"

// Defaults of a Spec's zero values (sandbox.Spec).
const (
	defaultCPU      = 2
	defaultMemoryMB = 8192
	defaultTTL      = 7200 * time.Second
)

// Capabilities implements sandbox.Provider. NetworkPolicy is claimed only
// where the config says the cluster enforces NetworkPolicy objects.
func (p *Provider) Capabilities() sandbox.Capabilities {
	return sandbox.Capabilities{Container: true, Reconnect: true, NetworkPolicy: p.cfg.NetworkPolicyEnforced}
}

// CreateSandbox implements sandbox.Provider for container mode.
func (p *Provider) CreateSandbox(ctx context.Context, s sandbox.Spec) (sandbox.Sandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Mode != sandbox.ModeContainer {
		return nil, fmt.Errorf("kubernetes: %s mode: %w (a Pod is a container; use the local provider for VM-mode work folders)", s.Mode, sandbox.ErrNotSupported)
	}
	if !s.NetworkPolicy.IsAllowAll() && !p.cfg.NetworkPolicyEnforced {
		return nil, fmt.Errorf("kubernetes: an allowlist network policy: %w: the cluster is not declared to enforce NetworkPolicy objects (its CNI must, e.g. Calico or Cilium; then set network_policy_enforced = true in [sandbox.providers.kubernetes.config])", sandbox.ErrNotSupported)
	}
	if err := validEnvKeys(s.Env); err != nil {
		return nil, fmt.Errorf("%w: %v", sandbox.ErrInvalidSpec, err)
	}
	if err := p.Check(ctx); err != nil {
		return nil, err
	}
	ttl, cpu, mem := s.TTL, s.CPU, s.MemoryMB
	if ttl <= 0 {
		ttl = defaultTTL
	}
	if cpu <= 0 {
		cpu = defaultCPU
	}
	if mem <= 0 {
		mem = defaultMemoryMB
	}
	id := "k8s-" + randHex(4)
	labels := envdeploy.OwnerLabels(id, false, time.Now().Add(ttl))
	for k, v := range s.Labels {
		labels[envdeploy.LabelAttrPrefix+k] = v
	}
	gi, err := p.CreateGroup(ctx, envdeploy.GroupSpec{ID: id, Labels: labels})
	if err != nil {
		return nil, err
	}
	g := gi.(*Group)
	fail := func(err error) (sandbox.Sandbox, error) {
		cctx, cancel := envdeploy.CleanupContext(ctx)
		defer cancel()
		return nil, errors.Join(err, g.Terminate(cctx))
	}
	if !s.NetworkPolicy.IsAllowAll() {
		// Before the Pod: it never runs unconfined.
		np, err := networkPolicy(ctx, g, s.NetworkPolicy)
		if err != nil {
			return fail(fmt.Errorf("%w: %v", sandbox.ErrInvalidSpec, err))
		}
		if _, err := p.cs.NetworkingV1().NetworkPolicies(p.ns).Create(ctx, np, metav1.CreateOptions{}); err != nil {
			return fail(p.wrap("create networkpolicy", err))
		}
	}
	ps := podSpec{name: g.podName(mainWorkload), gid: id, workload: mainWorkload, kind: "sandbox", groupLabels: g.labels,
		env: s.Env, port: s.Port, ttl: ttl, cpu: cpu, memoryMB: mem, workDir: "/app", hostNetwork: p.cfg.HostNetwork}
	// No tarball: a sandbox's image is used as written (see podImage).
	ep, err := g.run(ctx, ps, envdeploy.Source{Ref: s.Image, What: "sandbox image"}, s.Port > 0)
	if err != nil {
		return fail(err)
	}
	sb := &Sandbox{p: p, g: g, pod: ps.name, policy: s.NetworkPolicy, tunnels: map[int]string{}}
	if ep.Host != "" {
		sb.tunnels[s.Port] = ep.Host
	}
	return sb, nil
}

// GetSandbox implements sandbox.Reconnector. Port-forwards are not
// restored: a reconnected sandbox's tunnels are those of its handle.
func (p *Provider) GetSandbox(ctx context.Context, h sandbox.Handle) (sandbox.Sandbox, error) {
	if h.Type != "" && h.Type != TypeName {
		return nil, fmt.Errorf("kubernetes: handle of type %q: %w", h.Type, sandbox.ErrNotFound)
	}
	gi, err := p.OpenGroup(ctx, h.ID)
	if errors.Is(err, envdeploy.ErrNotFound) {
		return nil, fmt.Errorf("kubernetes: sandbox %q: %w", h.ID, sandbox.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	g := gi.(*Group)
	name := g.podName(mainWorkload)
	if _, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("kubernetes: sandbox %q has no pod: %w", h.ID, sandbox.ErrNotFound)
	} else if err != nil {
		return nil, p.wrap("get pod "+name, err)
	}
	var st handleState
	_ = json.Unmarshal(h.State, &st)
	if st.Tunnels == nil {
		st.Tunnels = map[int]string{}
	}
	return &Sandbox{p: p, g: g, pod: name, policy: st.Policy, tunnels: st.Tunnels}, nil
}

type handleState struct {
	Tunnels map[int]string        `json:"tunnels"`
	Policy  sandbox.NetworkPolicy `json:"network_policy"`
}

// Sandbox is one container-mode sandbox: Pod pod of group g.
type Sandbox struct {
	p       *Provider
	g       *Group
	pod     string
	policy  sandbox.NetworkPolicy
	tunnels map[int]string

	mu         sync.Mutex
	terminated bool
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

// ID implements sandbox.Sandbox.
func (s *Sandbox) ID() string { return s.g.ID() }

// Type implements sandbox.Sandbox.
func (s *Sandbox) Type() string { return TypeName }

// Mode implements sandbox.Sandbox.
func (s *Sandbox) Mode() sandbox.Mode { return sandbox.ModeContainer }

// PodName is the name of the sandbox's Pod.
func (s *Sandbox) PodName() string { return s.pod }

// TunnelURLs implements sandbox.Sandbox.
func (s *Sandbox) TunnelURLs() map[int]string {
	out := make(map[int]string, len(s.tunnels))
	for k, v := range s.tunnels {
		out[k] = v
	}
	return out
}

// NetworkPolicy implements sandbox.Sandbox.
func (s *Sandbox) NetworkPolicy() sandbox.NetworkPolicy { return s.policy }

// Handle implements sandbox.Sandbox.
func (s *Sandbox) Handle() sandbox.Handle {
	st, _ := json.Marshal(handleState{Tunnels: s.tunnels, Policy: s.policy})
	return sandbox.Handle{Version: 1, Type: TypeName, ID: s.g.ID(), State: st}
}

// alive refuses work on a terminated sandbox.
func (s *Sandbox) alive(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.terminated {
		return sandbox.ErrTerminated
	}
	return nil
}

// Terminate implements sandbox.Sandbox; a second call returns nil.
func (s *Sandbox) Terminate(ctx context.Context) error {
	s.mu.Lock()
	if s.terminated {
		s.mu.Unlock()
		return nil
	}
	s.terminated = true
	s.mu.Unlock()
	return s.g.Terminate(context.WithoutCancel(ctx))
}

// Sweep implements sandbox.Sweeper: the sandboxes whose creation labels
// include labels are deleted whole, even one whose creator died before
// CreateSandbox returned.
func (p *Provider) Sweep(ctx context.Context, labels map[string]string) ([]string, error) {
	ids, err := envdeploy.SweepLabelled(ctx, p, labels)
	if err != nil {
		return ids, fmt.Errorf("kubernetes: sweep: %w", err)
	}
	return ids, nil
}
