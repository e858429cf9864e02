package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/local"
)

// TypeName is the provider's sandbox name.
const TypeName = "process"

// EnvMarker is set in every process's environment to its group id.
const EnvMarker = "AGENTENV_SANDBOX"

const stateFile = "group.json"

// Options tunes New; nil means defaults.
type Options struct {
	Logger *slog.Logger
}

// Provider runs groups under one root folder.
type Provider struct {
	root string
	log  *slog.Logger
}

var _ envdeploy.Backend = (*Provider)(nil)

// DefaultRoot is the "process" folder under the local sandbox root:
// $AGENT_ENV_LOCAL_SANDBOX_DIR/process or ~/.agent-env-sandboxes/process.
func DefaultRoot() string {
	if d := os.Getenv("AGENT_ENV_LOCAL_SANDBOX_DIR"); d != "" {
		return filepath.Join(d, "process")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), ".agent-env-sandboxes", "process")
	}
	return filepath.Join(home, ".agent-env-sandboxes", "process")
}

// New returns a provider keeping its groups under root.
func New(root string, o *Options) *Provider {
	if root == "" {
		panic("process.New: empty root")
	}
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	return &Provider{root: root, log: opt.Logger}
}

// Type implements envdeploy.Backend.
func (p *Provider) Type() string { return TypeName }

// Check implements envdeploy.Backend; processes need nothing.
func (p *Provider) Check(ctx context.Context) error { return ctx.Err() }

// ReachableURL implements envdeploy.Backend: processes share the host.
func (p *Provider) ReachableURL(u string) string { return u }

// Close implements envdeploy.Backend.
func (p *Provider) Close() error { return nil }

type procState struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	Port int    `json:"port,omitempty"`
}

type groupState struct {
	ID     string            `json:"id"`
	Labels map[string]string `json:"labels"`
	Procs  []procState       `json:"procs"`
}

// Group is one state folder and its processes.
type Group struct {
	p   *Provider
	dir string

	mu         sync.Mutex
	st         groupState
	cmds       map[string]*exec.Cmd
	exited     map[string]chan struct{} // closed when the workload's process ends
	terminated bool
}

var _ envdeploy.Group = (*Group)(nil)

// GroupDir is the state folder of group id.
func (p *Provider) GroupDir(id string) string { return filepath.Join(p.root, "agentenv-"+id) }

// CreateGroup implements envdeploy.Backend.
func (p *Provider) CreateGroup(ctx context.Context, s envdeploy.GroupSpec) (envdeploy.Group, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id := s.ID
	if id == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		id = "process-" + hex.EncodeToString(b)
	}
	if strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return nil, fmt.Errorf("process: invalid group id %q", id)
	}
	labels := maps.Clone(s.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[envdeploy.LabelSandbox] = id
	if _, ok := labels[envdeploy.LabelInstance]; !ok {
		labels[envdeploy.LabelInstance] = id
	}
	if _, ok := labels[envdeploy.LabelOwner]; !ok {
		maps.Copy(labels, envdeploy.OwnerLabels(labels[envdeploy.LabelInstance], false, time.Time{}))
	}
	if err := os.MkdirAll(p.root, 0o700); err != nil {
		return nil, fmt.Errorf("process: %w", err)
	}
	dir := p.GroupDir(id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("process: create group folder: %w", err)
	}
	g := &Group{p: p, dir: dir, st: groupState{ID: id, Labels: labels}, cmds: map[string]*exec.Cmd{}, exited: map[string]chan struct{}{}}
	if err := g.save(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return g, nil
}

// OpenGroup implements envdeploy.Backend from group.json.
func (p *Provider) OpenGroup(ctx context.Context, id string) (envdeploy.Group, error) {
	if strings.ContainsAny(id, `/\`) || id == "" || id == "." || id == ".." {
		return nil, fmt.Errorf("process group %q: %w", id, envdeploy.ErrNotFound)
	}
	return p.open(p.GroupDir(id))
}

func (p *Provider) open(dir string) (*Group, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("process group %s: %w", filepath.Base(dir), envdeploy.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("process: %w", err)
	}
	var st groupState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("process: %s: %w", dir, err)
	}
	return &Group{p: p, dir: dir, st: st, cmds: map[string]*exec.Cmd{}, exited: map[string]chan struct{}{}}, nil
}

func (g *Group) save() error {
	b, err := json.MarshalIndent(g.st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(g.dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("process: %w", err)
	}
	return os.Rename(tmp, filepath.Join(g.dir, stateFile))
}

// ID implements envdeploy.Group.
func (g *Group) ID() string { return g.st.ID }

// Labels are the group's labels.
func (g *Group) Labels() map[string]string { return maps.Clone(g.st.Labels) }

// Run implements envdeploy.Group: it writes the binary into the group
// folder and starts it in its own process group on a free loopback port.
func (g *Group) Run(ctx context.Context, w envdeploy.Workload) (envdeploy.Endpoint, error) {
	g.mu.Lock()
	if g.terminated {
		g.mu.Unlock()
		return envdeploy.Endpoint{}, fmt.Errorf("process group %s is terminated", g.st.ID)
	}
	g.mu.Unlock()
	if w.Name == "" || strings.ContainsAny(w.Name, `/\`) {
		return envdeploy.Endpoint{}, fmt.Errorf("process: invalid workload name %q", w.Name)
	}
	if w.Source.Binary == nil {
		return envdeploy.Endpoint{}, fmt.Errorf("%w: %s has no static binary, so it cannot run as a process (register it with --go-package, or use --sandbox docker)",
			envdeploy.ErrImageMissing, w.Source.What)
	}
	bin := filepath.Join(g.dir, w.Name+".bin")
	if err := writeBinary(ctx, w.Source, bin); err != nil {
		return envdeploy.Endpoint{}, err
	}
	env := os.Environ()
	env = append(env, EnvMarker+"="+g.st.ID)
	keys := make([]string, 0, len(w.Env))
	for k := range w.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := w.Env[k]
		if k == "MCP_HOST" || k == "A2A_HOST" {
			v = "127.0.0.1" // never listen beyond loopback
		}
		env = append(env, k+"="+v)
	}
	port := 0
	if w.Port > 0 {
		var err error
		if port, err = freePort(); err != nil {
			return envdeploy.Endpoint{}, fmt.Errorf("process: allocate a port: %w", err)
		}
		if w.PortEnv != "" {
			env = append(env, w.PortEnv+"="+strconv.Itoa(port))
		}
		env = append(env, "MCP_HOST=127.0.0.1", "A2A_HOST=127.0.0.1")
	}
	logf, err := os.OpenFile(filepath.Join(g.dir, w.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return envdeploy.Endpoint{}, fmt.Errorf("process: %w", err)
	}
	defer logf.Close()
	var cmd *exec.Cmd
	for attempt := 0; ; attempt++ {
		cmd = exec.Command(bin)
		cmd.Dir = g.dir
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		err := cmd.Start()
		if err == nil {
			break
		}
		// ETXTBSY: a concurrent fork (another workload starting) inherited
		// the write descriptor of a binary just written; it closes as soon
		// as that child execs (golang/go#22315). Retry briefly.
		if !errors.Is(err, syscall.ETXTBSY) || attempt >= 50 {
			return envdeploy.Endpoint{}, fmt.Errorf("process: start %s: %w", w.Name, err)
		}
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
	g.mu.Lock()
	g.cmds[w.Name] = cmd
	g.st.Procs = append(g.st.Procs, procState{Name: w.Name, PID: cmd.Process.Pid, Port: port})
	err = g.save()
	g.mu.Unlock()
	exited := make(chan struct{})
	g.mu.Lock()
	g.exited[w.Name] = exited
	g.mu.Unlock()
	go func() { _ = cmd.Wait(); close(exited) }() // reap, and let Exited see a crash
	if err != nil {
		return envdeploy.Endpoint{}, err
	}
	ep := envdeploy.Endpoint{ID: strconv.Itoa(cmd.Process.Pid)}
	if port > 0 {
		ep.Internal = "http://127.0.0.1:" + strconv.Itoa(port)
		if w.Publish {
			ep.Host = ep.Internal
		}
	}
	return ep, nil
}

func writeBinary(ctx context.Context, src envdeploy.Source, dst string) error {
	rc, err := src.Binary(ctx)
	if err != nil {
		return fmt.Errorf("%w: binary of %s: %v (re-run %s)", envdeploy.ErrImageMissing, src.What, err, src.PutHint)
	}
	defer rc.Close()
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o700)
	if err != nil {
		return fmt.Errorf("process: %w", err)
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return fmt.Errorf("process: write binary of %s: %w", src.What, err)
	}
	return f.Close()
}

// Exited implements envdeploy.ExitWatcher: the first workload started by
// this handle whose process has ended.
func (g *Group) Exited(ctx context.Context) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for name, ch := range g.exited {
		select {
		case <-ch:
			return name, true
		default:
		}
	}
	return "", false
}

// Logs implements envdeploy.Group.
func (g *Group) Logs(ctx context.Context, name string, lines int) string {
	b, err := os.ReadFile(filepath.Join(g.dir, name+".log"))
	if err != nil {
		return ""
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// Terminate implements envdeploy.Group: it kills every process group
// (SIGTERM, then SIGKILL after 2 s) and removes the folder; idempotent.
func (g *Group) Terminate(ctx context.Context) error {
	g.mu.Lock()
	if g.terminated {
		g.mu.Unlock()
		return nil
	}
	g.terminated = true
	procs := append([]procState(nil), g.st.Procs...)
	g.mu.Unlock()
	for _, pr := range procs {
		stopGroup(pr.PID)
	}
	if filepath.Dir(g.dir) != g.p.root {
		return fmt.Errorf("process: refusing to delete %s", g.dir)
	}
	if err := os.RemoveAll(g.dir); err != nil {
		return fmt.Errorf("process: terminate %s: %w", g.st.ID, err)
	}
	return nil
}

// stopGroup signals the process group pid (each workload leads its own).
func stopGroup(pid int) {
	if pid <= 0 {
		return
	}
	if syscall.Kill(-pid, syscall.SIGTERM) != nil {
		return // gone
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(-pid, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// Prune implements envdeploy.Backend over the groups under the root.
func (p *Provider) Prune(ctx context.Context, orphaned func(map[string]string) bool) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(p.root, "agentenv-*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, dir := range dirs {
		g, err := p.open(dir)
		if err != nil {
			continue
		}
		if orphaned != nil && !orphaned(g.st.Labels) {
			continue
		}
		if err := g.Terminate(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "process group "+g.st.ID)
	}
	return removed, errors.Join(errs...)
}

// Groups lists the ids of the groups under the root (leak checks).
func (p *Provider) Groups() []string {
	dirs, _ := filepath.Glob(filepath.Join(p.root, "agentenv-*"))
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, strings.TrimPrefix(filepath.Base(d), "agentenv-"))
	}
	return out
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var _ envdeploy.FileGroup = (*Group)(nil)

// CopyOut implements envdeploy.FileGroup: the workloads run in the group
// folder, which stands for /app as a local sandbox's work folder does.
func (g *Group) CopyOut(ctx context.Context, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
	return local.CopyOutDir(ctx, g.dir, root, o, fn)
}
