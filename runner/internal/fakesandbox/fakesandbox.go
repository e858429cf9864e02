// Package fakesandbox is a scriptable sandbox provider for the runner's
// tests: it fails the first N creations, then delegates to a local
// work-folder provider while reporting its own type name. It drives the
// tests of fallback chains (local,fake), teardown and retries without
// Docker, and passes the shared sandboxtest suite itself.
package fakesandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/local"
)

// ErrScripted is the error of a scripted creation failure.
var ErrScripted = errors.New("fake: scripted failure")

// Provider is the fake provider.
type Provider struct {
	name  string
	inner *local.Provider

	mu          sync.Mutex
	failCreates int
	created     int
	terminated  int
}

var (
	_ sandbox.Provider    = (*Provider)(nil)
	_ sandbox.Reconnector = (*Provider)(nil)
)

// New returns a provider named name whose work folders live under root
// and whose first failCreates creations fail.
func New(name, root string, failCreates int) *Provider {
	return &Provider{name: name, inner: local.New(root, nil), failCreates: failCreates}
}

// Type implements sandbox.Provider.
func (p *Provider) Type() string { return p.name }

// Capabilities implements sandbox.Provider.
func (p *Provider) Capabilities() sandbox.Capabilities { return p.inner.Capabilities() }

// Close implements sandbox.Provider.
func (p *Provider) Close() error { return nil }

// Counts reports successful creations and terminations.
func (p *Provider) Counts() (created, terminated int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.created, p.terminated
}

// CreateSandbox implements sandbox.Provider.
func (p *Provider) CreateSandbox(ctx context.Context, s sandbox.Spec) (sandbox.Sandbox, error) {
	p.mu.Lock()
	if p.failCreates > 0 {
		p.failCreates--
		p.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", p.name, ErrScripted)
	}
	p.mu.Unlock()
	sb, err := p.inner.CreateSandbox(ctx, s)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.created++
	p.mu.Unlock()
	return &box{Sandbox: sb, p: p}, nil
}

// GetSandbox implements sandbox.Reconnector.
func (p *Provider) GetSandbox(ctx context.Context, h sandbox.Handle) (sandbox.Sandbox, error) {
	if h.Type != p.name {
		return nil, fmt.Errorf("fake: handle of type %q: %w", h.Type, sandbox.ErrNotFound)
	}
	h.Type = local.TypeName
	sb, err := p.inner.GetSandbox(ctx, h)
	if err != nil {
		return nil, err
	}
	return &box{Sandbox: sb, p: p}, nil
}

type box struct {
	sandbox.Sandbox
	p    *Provider
	once sync.Once
}

func (b *box) Type() string { return b.p.name }

func (b *box) Handle() sandbox.Handle {
	h := b.Sandbox.Handle()
	h.Type = b.p.name
	return h
}

func (b *box) Terminate(ctx context.Context) error {
	err := b.Sandbox.Terminate(ctx)
	b.once.Do(func() {
		b.p.mu.Lock()
		b.p.terminated++
		b.p.mu.Unlock()
	})
	return err
}
