package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"sync"
	"time"

	"github.com/agentenv/agentenv/runner/sandbox"
)

// Wire types of the sandbox methods. Byte fields ([]byte) travel as
// standard base64 strings.
type (
	// SandboxSpec is sandbox/create's spec.
	SandboxSpec struct {
		Name          string                `json:"name,omitempty"`
		Mode          sandbox.Mode          `json:"mode"`
		Image         string                `json:"image,omitempty"`
		Port          int                   `json:"port,omitempty"`
		Env           map[string]string     `json:"env,omitempty"`
		CPU           float64               `json:"cpu,omitempty"`
		MemoryMB      int                   `json:"memory_mb,omitempty"`
		DiskGB        float64               `json:"disk_gb,omitempty"`
		TTLSeconds    float64               `json:"ttl_seconds,omitempty"`
		ExposedPorts  []int                 `json:"exposed_ports,omitempty"`
		Labels        map[string]string     `json:"labels,omitempty"`
		NetworkPolicy sandbox.NetworkPolicy `json:"network_policy"`
	}
	// CreateParams are sandbox/create's params.
	CreateParams struct {
		Provider string      `json:"provider"`
		Spec     SandboxSpec `json:"spec"`
	}
	// CreateResult is sandbox/create's result. TunnelURLs maps a port
	// (as a string) to the URL that reaches it from the host.
	CreateResult struct {
		ID         string            `json:"id"`
		TunnelURLs map[string]string `json:"tunnel_urls,omitempty"`
	}
	// SandboxRef names a sandbox (sandbox/terminate's params).
	SandboxRef struct {
		Provider string `json:"provider"`
		ID       string `json:"id"`
	}
	// ExecParams are sandbox/exec's params.
	ExecParams struct {
		SandboxRef
		Argv  []string          `json:"argv"`
		Env   map[string]string `json:"env,omitempty"`
		Dir   string            `json:"dir,omitempty"`
		Stdin []byte            `json:"stdin,omitempty"`
	}
	// ExecResult is sandbox/exec's result.
	ExecResult struct {
		ExitCode int    `json:"exit_code"`
		Stdout   []byte `json:"stdout"`
		Stderr   []byte `json:"stderr"`
	}
	// FileParams are the params of sandbox/write_file, read_file and stat.
	FileParams struct {
		SandboxRef
		Path string `json:"path"`
		Data []byte `json:"data,omitempty"` // write_file
		Mode uint32 `json:"mode,omitempty"` // write_file: permission bits
	}
	// FileResult is the result of sandbox/read_file and
	// sandbox/tree_read_file.
	FileResult struct {
		Data []byte `json:"data"`
		Mode uint32 `json:"mode,omitempty"` // permission bits
	}
	// StatResult is sandbox/stat's and sandbox/tree_lstat's result.
	StatResult struct {
		Type    string `json:"type"` // file, dir, symlink or other
		Size    int64  `json:"size"`
		Mode    uint32 `json:"mode"` // permission bits
		ModTime string `json:"mod_time,omitempty"`
	}
	// TreeParams are the params of the sandbox/tree_* methods: Name is a
	// slash path relative to Root ("." is Root itself); tree_inside takes
	// Target instead.
	TreeParams struct {
		SandboxRef
		Root   string `json:"root"`
		Name   string `json:"name,omitempty"`
		Target string `json:"target,omitempty"`
	}
	// TreeReadLinkResult is sandbox/tree_readlink's result.
	TreeReadLinkResult struct {
		Target string `json:"target"`
	}
	// TreeReadDirResult is sandbox/tree_readdir's result.
	TreeReadDirResult struct {
		Names []string `json:"names"`
	}
	// TreeInsideResult is sandbox/tree_inside's result.
	TreeInsideResult struct {
		Name string `json:"name"`
		OK   bool   `json:"ok"`
	}
)

// Unwrap maps the protocol's error codes to the runner's sandbox errors.
func (e *RemoteError) Unwrap() error {
	switch e.Code {
	case CodeNotSupported:
		return sandbox.ErrNotSupported
	case CodeInvalidSpec:
		return sandbox.ErrInvalidSpec
	case CodeNotFound:
		return fs.ErrNotExist
	case CodeTerminated:
		return sandbox.ErrTerminated
	case CodeCancelled:
		return context.Canceled
	}
	return nil
}

// Provider is a sandbox provider served by a plugin.
type Provider struct {
	p *Plugin
	t ProviderType
}

var _ sandbox.Provider = (*Provider)(nil)

// Provider returns the sandbox provider pt of the plugin.
func (p *Plugin) Provider(pt ProviderType) *Provider { return &Provider{p: p, t: pt} }

// Type is the provider's name.
func (pv *Provider) Type() string { return pv.t.Name }

// Capabilities are what the plugin claimed in plugin/describe.
func (pv *Provider) Capabilities() sandbox.Capabilities {
	c := pv.t.Capabilities
	return sandbox.Capabilities{VM: c.VM, Container: c.Container, NetworkPolicy: c.NetworkPolicy}
}

// Close does nothing: the plugin's process belongs to the Plugin (or Set),
// which ends it.
func (pv *Provider) Close() error { return nil }

// CreateSandbox checks the spec against the claimed capabilities, then
// asks the plugin.
func (pv *Provider) CreateSandbox(ctx context.Context, s sandbox.Spec) (sandbox.Sandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	caps := pv.Capabilities()
	switch {
	case s.Mode == sandbox.ModeVM && !caps.VM, s.Mode == sandbox.ModeContainer && !caps.Container:
		return nil, fmt.Errorf("sandbox provider %s: %s mode: %w", pv.t.Name, s.Mode, sandbox.ErrNotSupported)
	case !s.NetworkPolicy.IsAllowAll() && !caps.NetworkPolicy:
		return nil, fmt.Errorf("sandbox provider %s: network policy %s: %w", pv.t.Name, s.NetworkPolicy.Mode, sandbox.ErrNotSupported)
	}
	spec := SandboxSpec{Name: s.Name, Mode: s.Mode, Image: s.Image, Port: s.Port, Env: s.Env, CPU: s.CPU,
		MemoryMB: s.MemoryMB, DiskGB: s.DiskGB, TTLSeconds: s.TTL.Seconds(), ExposedPorts: s.ExposedPorts,
		Labels: s.Labels, NetworkPolicy: s.NetworkPolicy}
	var res CreateResult
	if err := pv.p.Call(ctx, MethodSandboxCreate, CreateParams{Provider: pv.t.Name, Spec: spec}, &res); err != nil {
		return nil, err
	}
	if res.ID == "" {
		return nil, &Error{Plugin: pv.p.Name(), Method: MethodSandboxCreate, Err: errors.New("answered without a sandbox id")}
	}
	sb := &Sandbox{pv: pv, ref: SandboxRef{Provider: pv.t.Name, ID: res.ID}, mode: s.Mode, policy: s.NetworkPolicy,
		tunnels: map[int]string{}}
	for k, u := range res.TunnelURLs {
		port, err := strconv.Atoi(k)
		if err != nil {
			return nil, &Error{Plugin: pv.p.Name(), Method: MethodSandboxCreate, Err: fmt.Errorf("tunnel_urls key %q is not a port", k)}
		}
		sb.tunnels[port] = u
	}
	return sb, nil
}

// Sandbox is one sandbox of a plugin provider.
type Sandbox struct {
	pv      *Provider
	ref     SandboxRef
	mode    sandbox.Mode
	policy  sandbox.NetworkPolicy
	tunnels map[int]string

	mu         sync.Mutex
	terminated bool
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

func (s *Sandbox) ID() string                           { return s.ref.ID }
func (s *Sandbox) Type() string                         { return s.pv.t.Name }
func (s *Sandbox) Mode() sandbox.Mode                   { return s.mode }
func (s *Sandbox) NetworkPolicy() sandbox.NetworkPolicy { return s.policy }
func (s *Sandbox) Handle() sandbox.Handle {
	return sandbox.Handle{Version: 1, Type: s.pv.t.Name, ID: s.ref.ID}
}

func (s *Sandbox) TunnelURLs() map[int]string {
	out := make(map[int]string, len(s.tunnels))
	for k, v := range s.tunnels {
		out[k] = v
	}
	return out
}

// call refuses work on a terminated sandbox or under an ended context,
// then calls the plugin.
func (s *Sandbox) call(ctx context.Context, method string, params, result any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	t := s.terminated
	s.mu.Unlock()
	if t {
		return fmt.Errorf("sandbox %s: %w", s.ref.ID, sandbox.ErrTerminated)
	}
	return s.pv.p.Call(ctx, method, params, result)
}

func (s *Sandbox) Exec(ctx context.Context, argv []string, o *sandbox.ExecOptions) (sandbox.ExecResult, error) {
	p := ExecParams{SandboxRef: s.ref, Argv: argv}
	if o != nil {
		p.Env, p.Dir = o.Env, o.Dir
		if o.Stdin != nil {
			b, err := io.ReadAll(o.Stdin)
			if err != nil {
				return sandbox.ExecResult{}, fmt.Errorf("reading stdin: %w", err)
			}
			p.Stdin = b
		}
	}
	var res ExecResult
	if err := s.call(ctx, MethodSandboxExec, p, &res); err != nil {
		return sandbox.ExecResult{}, err
	}
	return sandbox.ExecResult{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr}, nil
}

func (s *Sandbox) WriteFile(ctx context.Context, p string, r io.Reader, perm fs.FileMode) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return s.call(ctx, MethodSandboxWriteFile, FileParams{SandboxRef: s.ref, Path: p, Data: b, Mode: uint32(perm.Perm())}, nil)
}

func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	var res FileResult
	if err := s.call(ctx, MethodSandboxReadFile, FileParams{SandboxRef: s.ref, Path: p}, &res); err != nil {
		return nil, err
	}
	return res.Data, nil
}

func (s *Sandbox) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	var res StatResult
	if err := s.call(ctx, MethodSandboxStat, FileParams{SandboxRef: s.ref, Path: p}, &res); err != nil {
		return nil, err
	}
	return fileInfo{name: path.Base(p), st: res}, nil
}

// CopyOut walks the folder through the plugin's sandbox/tree_* methods;
// every symlink is resolved here, with the folder as the boundary.
func (s *Sandbox) CopyOut(ctx context.Context, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return sandbox.WalkTree(ctx, &rpcTree{ctx: ctx, s: s, root: root}, root, o, fn)
}

// Terminate asks the plugin to remove the sandbox; later calls return
// ErrTerminated without reaching the plugin, and a second Terminate is nil.
func (s *Sandbox) Terminate(ctx context.Context) error {
	s.mu.Lock()
	if s.terminated {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	err := s.pv.p.Call(ctx, MethodSandboxTerminate, s.ref, nil)
	if err != nil && !errors.Is(err, sandbox.ErrTerminated) && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	s.mu.Lock()
	s.terminated = true
	s.mu.Unlock()
	return nil
}

type fileInfo struct {
	name string
	st   StatResult
}

func (f fileInfo) Name() string       { return f.name }
func (f fileInfo) Size() int64        { return f.st.Size }
func (f fileInfo) Mode() fs.FileMode  { return fileMode(f.st.Type, f.st.Mode) }
func (f fileInfo) IsDir() bool        { return f.st.Type == "dir" }
func (f fileInfo) Sys() any           { return nil }
func (f fileInfo) ModTime() time.Time { t, _ := time.Parse(time.RFC3339Nano, f.st.ModTime); return t }

func fileMode(typ string, perm uint32) fs.FileMode {
	m := fs.FileMode(perm).Perm()
	switch typ {
	case "dir":
		return m | fs.ModeDir
	case "symlink":
		return m | fs.ModeSymlink
	case "file":
		return m
	}
	return m | fs.ModeIrregular
}

// rpcTree is a sandbox.Tree served by the plugin.
type rpcTree struct {
	ctx  context.Context
	s    *Sandbox
	root string
}

func (t *rpcTree) params(name string) TreeParams {
	return TreeParams{SandboxRef: t.s.ref, Root: t.root, Name: name}
}

func (t *rpcTree) Lstat(name string) (fs.FileMode, error) {
	var res StatResult
	if err := t.s.call(t.ctx, MethodTreeLstat, t.params(name), &res); err != nil {
		return 0, err
	}
	return fileMode(res.Type, res.Mode), nil
}

func (t *rpcTree) ReadLink(name string) (string, error) {
	var res TreeReadLinkResult
	err := t.s.call(t.ctx, MethodTreeReadLink, t.params(name), &res)
	return res.Target, err
}

func (t *rpcTree) ReadDir(name string) ([]string, error) {
	var res TreeReadDirResult
	err := t.s.call(t.ctx, MethodTreeReadDir, t.params(name), &res)
	return res.Names, err
}

func (t *rpcTree) ReadFile(name string) ([]byte, fs.FileMode, error) {
	var res FileResult
	if err := t.s.call(t.ctx, MethodTreeReadFile, t.params(name), &res); err != nil {
		return nil, 0, err
	}
	return res.Data, fs.FileMode(res.Mode).Perm(), nil
}

func (t *rpcTree) Inside(target string) (string, bool) {
	p := t.params("")
	p.Target = target
	var res TreeInsideResult
	if err := t.s.call(t.ctx, MethodTreeInside, p, &res); err != nil {
		return "", false
	}
	return res.Name, res.OK
}
