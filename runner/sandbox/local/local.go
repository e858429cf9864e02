package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentenv/agentenv/runner/sandbox"
)

// TypeName is the provider's registry name.
const TypeName = "local"

// EnvMarker is the environment variable every sandbox process carries; its
// value is the sandbox id. Terminate kills every process carrying it.
const EnvMarker = "AGENTENV_SANDBOX"

const (
	portMapFile = ".port-map.json"
	stateFile   = ".sandbox.json"
	// stagingPrefix names a work folder being filled (see CreateSandbox).
	stagingPrefix = ".agent-env-staging-"
	// stagingMaxAge is how old a staging folder is before Reap takes it
	// for a dead creator's: creation takes milliseconds.
	stagingMaxAge = 10 * time.Minute
)

// Options tunes a Provider; nil means defaults.
type Options struct {
	// Logger receives debug lines; nil discards.
	Logger *slog.Logger
	// TempDir is where "/tmp/*-<id>" staging is cleaned on Terminate; ""
	// means os.TempDir().
	TempDir string
}

// Provider creates work-folder sandboxes under one root.
type Provider struct {
	root string
	log  *slog.Logger
	tmp  string
}

var (
	_ sandbox.Provider    = (*Provider)(nil)
	_ sandbox.Reconnector = (*Provider)(nil)
	_ sandbox.Sweeper     = (*Provider)(nil)
	_ sandbox.Sandbox     = (*Sandbox)(nil)
)

// DefaultRoot is $AGENT_ENV_LOCAL_SANDBOX_DIR or ~/.agent-env-sandboxes.
func DefaultRoot() string {
	if d := os.Getenv("AGENT_ENV_LOCAL_SANDBOX_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), ".agent-env-sandboxes")
	}
	return filepath.Join(home, ".agent-env-sandboxes")
}

// New returns a provider whose work folders live under root (created on
// first use).
func New(root string, o *Options) *Provider {
	if root == "" {
		panic("local.New: empty root")
	}
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.TempDir == "" {
		opts.TempDir = os.TempDir()
	}
	abs, err := filepath.Abs(root)
	if err == nil {
		root = abs
	}
	return &Provider{root: root, log: opts.Logger, tmp: opts.TempDir}
}

// Root is the folder holding the work folders.
func (p *Provider) Root() string { return p.root }

// Type implements sandbox.Provider.
func (p *Provider) Type() string { return TypeName }

// Capabilities implements sandbox.Provider.
func (p *Provider) Capabilities() sandbox.Capabilities {
	return sandbox.Capabilities{VM: true, Reconnect: true}
}

// Close implements sandbox.Provider; there is nothing to release.
func (p *Provider) Close() error { return nil }

type state struct {
	ID            string                `json:"id"`
	Dir           string                `json:"dir"`
	Name          string                `json:"name,omitempty"`
	CreatedAtUTC  time.Time             `json:"created_at_utc"`
	ExpiresAtUTC  time.Time             `json:"expires_at_utc"`
	Env           map[string]string     `json:"env,omitempty"`
	Labels        map[string]string     `json:"labels,omitempty"`
	NetworkPolicy sandbox.NetworkPolicy `json:"network_policy"`
}

// CreateSandbox implements sandbox.Provider.
func (p *Provider) CreateSandbox(ctx context.Context, s sandbox.Spec) (sandbox.Sandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Mode == sandbox.ModeContainer {
		return nil, fmt.Errorf("local: container mode needs a Docker engine: %w", sandbox.ErrNotSupported)
	}
	if !s.NetworkPolicy.IsAllowAll() {
		return nil, fmt.Errorf("local: only allow_all network policies: %w", sandbox.ErrNotSupported)
	}
	if err := os.MkdirAll(p.root, 0o700); err != nil {
		return nil, fmt.Errorf("local: create sandbox root: %w", err)
	}
	id := "local-" + randHex(4)
	dir := filepath.Join(p.root, "agent-env-"+id+"-"+randHex(4))
	// The folder is filled under a hidden name and renamed into place, so
	// a sandbox folder always has its state: a creator killed half-way
	// leaves a staging folder (Reap removes it) rather than a work folder
	// nothing can reconnect to or sweep.
	staging, err := os.MkdirTemp(p.root, stagingPrefix)
	if err != nil {
		return nil, fmt.Errorf("local: create work folder: %w", err)
	}
	ports := map[string]int{}
	for _, cp := range s.ExposedPorts {
		hp, err := freePort()
		if err != nil {
			_ = os.RemoveAll(staging)
			return nil, fmt.Errorf("local: allocate a host port for %d: %w", cp, err)
		}
		ports[strconv.Itoa(cp)] = hp
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = 7200 * time.Second
	}
	now := time.Now().UTC()
	st := state{ID: id, Dir: dir, Name: s.Name, CreatedAtUTC: now, ExpiresAtUTC: now.Add(ttl),
		Env: s.Env, Labels: s.Labels, NetworkPolicy: s.NetworkPolicy}
	if err := writeJSON(filepath.Join(staging, portMapFile), ports); err != nil {
		_ = os.RemoveAll(staging)
		return nil, err
	}
	if err := writeJSON(filepath.Join(staging, stateFile), st); err != nil {
		_ = os.RemoveAll(staging)
		return nil, err
	}
	if err := os.Rename(staging, dir); err != nil {
		_ = os.RemoveAll(staging)
		return nil, fmt.Errorf("local: create work folder: %w", err)
	}
	p.log.Debug("local sandbox created", "sandbox_id", id, "dir", dir)
	return p.handleFor(st, ports), nil
}

// GetSandbox implements sandbox.Reconnector: it rebuilds the handle from the
// work folder.
func (p *Provider) GetSandbox(ctx context.Context, h sandbox.Handle) (sandbox.Sandbox, error) {
	if h.Type != "" && h.Type != TypeName {
		return nil, fmt.Errorf("local: handle of type %q: %w", h.Type, sandbox.ErrNotFound)
	}
	if !strings.HasPrefix(h.ID, "local-") || strings.ContainsAny(h.ID, `/\*?[`) {
		return nil, fmt.Errorf("local: sandbox %q: %w", h.ID, sandbox.ErrNotFound)
	}
	matches, _ := filepath.Glob(filepath.Join(p.root, "agent-env-"+h.ID+"-*"))
	for _, dir := range matches {
		var st state
		b, err := os.ReadFile(filepath.Join(dir, stateFile))
		if err != nil || json.Unmarshal(b, &st) != nil || st.ID != h.ID {
			continue
		}
		st.Dir = dir
		ports := map[string]int{}
		if b, err := os.ReadFile(filepath.Join(dir, portMapFile)); err == nil {
			_ = json.Unmarshal(b, &ports)
		}
		return p.handleFor(st, ports), nil
	}
	return nil, fmt.Errorf("local: sandbox %q: %w", h.ID, sandbox.ErrNotFound)
}

func (p *Provider) handleFor(st state, ports map[string]int) *Sandbox {
	tunnels := map[int]string{}
	for k, hp := range ports {
		if cp, err := strconv.Atoi(k); err == nil {
			tunnels[cp] = "http://127.0.0.1:" + strconv.Itoa(hp)
		}
	}
	return &Sandbox{p: p, st: st, tunnels: tunnels, procs: map[int]struct{}{}}
}

// Sandbox is one work folder.
type Sandbox struct {
	p       *Provider
	st      state
	tunnels map[int]string

	mu         sync.Mutex
	terminated bool
	procs      map[int]struct{} // process group ids of running commands
}

// ID implements sandbox.Sandbox.
func (s *Sandbox) ID() string { return s.st.ID }

// Type implements sandbox.Sandbox.
func (s *Sandbox) Type() string { return TypeName }

// Mode implements sandbox.Sandbox; local sandboxes are VM-like.
func (s *Sandbox) Mode() sandbox.Mode { return sandbox.ModeVM }

// Dir is the host work folder that /app maps to.
func (s *Sandbox) Dir() string { return s.st.Dir }

// ExpiresAt is the recorded (not enforced) expiry.
func (s *Sandbox) ExpiresAt() time.Time { return s.st.ExpiresAtUTC }

// CreatedAt is when the sandbox was created.
func (s *Sandbox) CreatedAt() time.Time { return s.st.CreatedAtUTC }

// TunnelURLs implements sandbox.Sandbox.
func (s *Sandbox) TunnelURLs() map[int]string {
	out := make(map[int]string, len(s.tunnels))
	for k, v := range s.tunnels {
		out[k] = v
	}
	return out
}

// NetworkPolicy implements sandbox.Sandbox.
func (s *Sandbox) NetworkPolicy() sandbox.NetworkPolicy { return s.st.NetworkPolicy }

// Handle implements sandbox.Sandbox.
func (s *Sandbox) Handle() sandbox.Handle {
	b, _ := json.Marshal(map[string]string{"dir": s.st.Dir})
	return sandbox.Handle{Version: 1, Type: TypeName, ID: s.st.ID, State: b}
}

// Terminate implements sandbox.Sandbox: it kills the sandbox's processes,
// removes /tmp/*-<id> staging and deletes the work folder (only when it is
// directly under the provider root and not a symlink).
func (s *Sandbox) Terminate(ctx context.Context) error {
	s.mu.Lock()
	if s.terminated {
		s.mu.Unlock()
		return nil
	}
	s.terminated = true
	groups := make([]int, 0, len(s.procs))
	for g := range s.procs {
		groups = append(groups, g)
	}
	s.mu.Unlock()

	for _, g := range groups {
		killGroup(g)
	}
	killMarked(s.st.ID)
	if staged, _ := filepath.Glob(filepath.Join(s.p.tmp, "*-"+s.st.ID)); len(staged) > 0 {
		for _, f := range staged {
			_ = os.RemoveAll(f)
		}
	}
	return s.removeDir()
}

func (s *Sandbox) removeDir() error {
	dir := s.st.Dir
	if filepath.Dir(dir) != s.p.root || !strings.HasPrefix(filepath.Base(dir), "agent-env-"+s.st.ID+"-") {
		return fmt.Errorf("local: refusing to delete %q: not a work folder under %q", dir, s.p.root)
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("local: terminate %s: %w", s.st.ID, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("local: refusing to delete %q: not a plain folder", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("local: terminate %s: %w", s.st.ID, err)
	}
	return nil
}

func (s *Sandbox) alive() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.terminated {
		return fmt.Errorf("local sandbox %s: %w", s.st.ID, sandbox.ErrTerminated)
	}
	return nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("local: write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// Reap deletes the work folders under the root whose recorded expiry is
// before now, killing their processes first (TTLs are
// recorded, and expired sandboxes are removed on the next CLI start), and
// the staging folders of creators that died half-way. It returns the ids
// it removed.
func (p *Provider) Reap(ctx context.Context, now time.Time) ([]string, error) {
	if staged, _ := filepath.Glob(filepath.Join(p.root, stagingPrefix+"*")); len(staged) > 0 {
		for _, dir := range staged {
			if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && now.Sub(fi.ModTime()) > stagingMaxAge {
				_ = os.RemoveAll(dir)
			}
		}
	}
	return p.terminateWhere(ctx, func(st state) bool {
		return !st.ExpiresAtUTC.IsZero() && st.ExpiresAtUTC.Before(now)
	})
}

// Sweep implements sandbox.Sweeper over the labels recorded in each work
// folder's state.
func (p *Provider) Sweep(ctx context.Context, labels map[string]string) ([]string, error) {
	if len(labels) == 0 {
		return nil, fmt.Errorf("local: %w", sandbox.ErrNoSweepLabels)
	}
	return p.terminateWhere(ctx, func(st state) bool { return sandbox.HasLabels(st.Labels, labels) })
}

// terminateWhere terminates the work folders whose state match accepts.
func (p *Provider) terminateWhere(ctx context.Context, match func(state) bool) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(p.root, "agent-env-local-*"))
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, dir := range matches {
		if ctx.Err() != nil {
			break
		}
		b, err := os.ReadFile(filepath.Join(dir, stateFile))
		if err != nil {
			continue
		}
		var st state
		if json.Unmarshal(b, &st) != nil || !match(st) {
			continue
		}
		st.Dir = dir
		if err := p.handleFor(st, nil).Terminate(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, st.ID)
	}
	return done, errors.Join(errs...)
}
