package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// The container-mode sandbox.Provider (deploy_sandbox with
// sandbox_mode=container): one group with one container, "main", running
// Spec.Image with Spec.Port published on 127.0.0.1. The image must be in
// the engine already; nothing is pulled.

var (
	_ sandbox.Provider    = (*Provider)(nil)
	_ sandbox.Reconnector = (*Provider)(nil)
	_ sandbox.Sweeper     = (*Provider)(nil)
	_ sandbox.Sandbox     = (*Sandbox)(nil)
)

const mainWorkload = "main"

// Capabilities implements sandbox.Provider.
func (p *Provider) Capabilities() sandbox.Capabilities {
	return sandbox.Capabilities{Container: true, Reconnect: true}
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
		return nil, fmt.Errorf("docker: %s mode: %w (use the local provider for VM-mode work folders)", s.Mode, sandbox.ErrNotSupported)
	}
	if !s.NetworkPolicy.IsAllowAll() {
		return nil, fmt.Errorf("docker: only allow_all network policies: %w", sandbox.ErrNotSupported)
	}
	if err := p.Check(ctx); err != nil {
		return nil, err
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = 7200 * time.Second
	}
	id := "docker-" + randHex(4)
	labels := envdeploy.OwnerLabels(id, false, time.Now().Add(ttl))
	for k, v := range s.Labels {
		labels[envdeploy.LabelAttrPrefix+k] = v
	}
	g, err := p.CreateGroup(ctx, envdeploy.GroupSpec{ID: id, Labels: labels})
	if err != nil {
		return nil, err
	}
	ep, err := g.Run(ctx, envdeploy.Workload{Name: mainWorkload, Role: "sandbox", Env: s.Env, Port: s.Port, Publish: s.Port > 0,
		Source: envdeploy.Source{Ref: s.Image, What: "image " + s.Image, PutHint: "docker load (images are never pulled)"}})
	if err != nil {
		return nil, g.(*Group).cleanup(ctx, err)
	}
	sb := &Sandbox{p: p, g: g.(*Group), container: ep.ID, policy: s.NetworkPolicy, tunnels: map[int]string{}}
	if ep.Host != "" {
		sb.tunnels[s.Port] = ep.Host
	}
	return sb, nil
}

// GetSandbox implements sandbox.Reconnector.
func (p *Provider) GetSandbox(ctx context.Context, h sandbox.Handle) (sandbox.Sandbox, error) {
	if h.Type != "" && h.Type != TypeName {
		return nil, fmt.Errorf("docker: handle of type %q: %w", h.Type, sandbox.ErrNotFound)
	}
	g, err := p.OpenGroup(ctx, h.ID)
	if errors.Is(err, envdeploy.ErrNotFound) {
		return nil, fmt.Errorf("docker: sandbox %q: %w", h.ID, sandbox.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	dg := g.(*Group)
	cid := dg.containers[mainWorkload]
	if cid == "" {
		return nil, fmt.Errorf("docker: sandbox %q has no container: %w", h.ID, sandbox.ErrNotFound)
	}
	var st struct {
		Tunnels map[int]string        `json:"tunnels"`
		Policy  sandbox.NetworkPolicy `json:"network_policy"`
	}
	_ = json.Unmarshal(h.State, &st)
	if st.Tunnels == nil {
		st.Tunnels = map[int]string{}
	}
	return &Sandbox{p: p, g: dg, container: cid, policy: st.Policy, tunnels: st.Tunnels}, nil
}

// Sandbox is one container-mode sandbox.
type Sandbox struct {
	p         *Provider
	g         *Group
	container string
	policy    sandbox.NetworkPolicy
	tunnels   map[int]string

	mu         sync.Mutex
	terminated bool
}

// ID implements sandbox.Sandbox.
func (s *Sandbox) ID() string { return s.g.ID() }

// Type implements sandbox.Sandbox.
func (s *Sandbox) Type() string { return TypeName }

// Mode implements sandbox.Sandbox.
func (s *Sandbox) Mode() sandbox.Mode { return sandbox.ModeContainer }

// ContainerID is the engine's id of the sandbox's container.
func (s *Sandbox) ContainerID() string { return s.container }

// ContainerName is the name of the sandbox's container.
func (s *Sandbox) ContainerName() string { return s.g.ContainerName(mainWorkload) }

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
	b, _ := json.Marshal(map[string]any{"tunnels": s.tunnels, "network_policy": s.policy})
	return sandbox.Handle{Version: 1, Type: TypeName, ID: s.g.ID(), State: b}
}

func (s *Sandbox) alive(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.terminated {
		return fmt.Errorf("docker sandbox %s: %w", s.g.ID(), sandbox.ErrTerminated)
	}
	return nil
}

// abs maps a sandbox path: relative paths are under /app.
func abs(p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join("/app", p)
}

// Exec implements sandbox.Sandbox through the exec API. The image must
// have the program (FROM scratch images have no shell). Cancelling ctx
// stops waiting and returns ctx's error; the engine has no call to kill an
// exec, so the process may run on until the container is removed.
func (s *Sandbox) Exec(ctx context.Context, argv []string, o *sandbox.ExecOptions) (sandbox.ExecResult, error) {
	if err := s.alive(ctx); err != nil {
		return sandbox.ExecResult{}, err
	}
	if len(argv) == 0 {
		return sandbox.ExecResult{}, fmt.Errorf("docker: exec: empty argv")
	}
	var opts sandbox.ExecOptions
	if o != nil {
		opts = *o
	}
	var env []string
	keys := make([]string, 0, len(opts.Env))
	for k := range opts.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+opts.Env[k])
	}
	wd := ""
	if opts.Dir != "" {
		wd = abs(opts.Dir)
	}
	ex, err := s.p.cli.ExecCreate(ctx, s.container, client.ExecCreateOptions{Cmd: argv, Env: env, WorkingDir: wd,
		AttachStdout: true, AttachStderr: true, AttachStdin: opts.Stdin != nil})
	if err != nil {
		return sandbox.ExecResult{}, s.p.wrap("exec", err)
	}
	att, err := s.p.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return sandbox.ExecResult{}, s.p.wrap("exec attach", err)
	}
	defer att.Close()
	if opts.Stdin != nil {
		go func() {
			_, _ = io.Copy(att.Conn, opts.Stdin)
			_ = att.CloseWrite()
		}()
	}
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(&stdout, &stderr, att.Reader)
		done <- err
	}()
	select {
	case <-ctx.Done():
		att.Close()
		return sandbox.ExecResult{}, ctx.Err()
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) {
			return sandbox.ExecResult{}, fmt.Errorf("docker: exec output: %w", err)
		}
	}
	ins, err := s.p.cli.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	if err != nil {
		return sandbox.ExecResult{}, s.p.wrap("exec inspect", err)
	}
	return sandbox.ExecResult{ExitCode: ins.ExitCode, Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, nil
}

// WriteFile implements sandbox.Sandbox with the archive API (tar entries
// create the parent folders, so no shell is needed).
func (s *Sandbox) WriteFile(ctx context.Context, p string, r io.Reader, perm fs.FileMode) error {
	if err := s.alive(ctx); err != nil {
		return err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if perm == 0 {
		perm = 0o644
	}
	p = abs(p)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := path.Dir(p)
	var parents []string
	for d := dir; d != "/"; d = path.Dir(d) {
		parents = append([]string{d}, parents...)
	}
	for _, d := range parents {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755, ModTime: time.Now()}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p[1:], Mode: int64(perm.Perm()), Size: int64(len(b)), ModTime: time.Now()}); err != nil {
		return err
	}
	if _, err := tw.Write(b); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if _, err := s.p.cli.CopyToContainer(ctx, s.container, client.CopyToContainerOptions{DestinationPath: "/", Content: &buf}); err != nil {
		return s.p.wrap("write "+p, err)
	}
	return nil
}

// ReadFile implements sandbox.Sandbox with the archive API.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	if err := s.alive(ctx); err != nil {
		return nil, err
	}
	return s.readFile(ctx, abs(p))
}

// readFile reads p through the archive API. A symlink comes back as a link
// entry with no content, so it is read again at the target the engine
// resolved (within the container); anything but a regular file is an
// error, never an empty file.
func (s *Sandbox) readFile(ctx context.Context, p string) ([]byte, error) {
	src := p
	for range 2 {
		res, err := s.p.cli.CopyFromContainer(ctx, s.container, client.CopyFromContainerOptions{SourcePath: src})
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("docker: %s: %w", p, fs.ErrNotExist)
		}
		if err != nil {
			return nil, s.p.wrap("read "+p, err)
		}
		b, link, err := readOne(res)
		if err != nil {
			return nil, fmt.Errorf("docker: read %s: %w", p, err)
		}
		if link == "" {
			return b, nil
		}
		src = link
	}
	return nil, fmt.Errorf("docker: read %s: the link's target %s is a link again", p, src)
}

// readOne reads the single file of a copy-out archive, or says where the
// symlink it holds leads.
func readOne(res client.CopyFromContainerResult) (data []byte, link string, err error) {
	defer res.Content.Close()
	if res.Stat.Mode&fs.ModeSymlink != 0 && res.Stat.LinkTarget != "" {
		return nil, res.Stat.LinkTarget, nil
	}
	if res.Stat.Mode.IsDir() {
		return nil, "", errors.New("is a directory")
	}
	tr := tar.NewReader(res.Content)
	h, err := tr.Next()
	if err != nil {
		return nil, "", err
	}
	if h.Typeflag != tar.TypeReg {
		return nil, "", fmt.Errorf("%w (tar entry type %q)", sandbox.ErrNotRegular, h.Typeflag)
	}
	b, err := io.ReadAll(tr)
	return b, "", err
}

// Stat implements sandbox.Sandbox.
func (s *Sandbox) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	if err := s.alive(ctx); err != nil {
		return nil, err
	}
	p = abs(p)
	res, err := s.p.cli.ContainerStatPath(ctx, s.container, client.ContainerStatPathOptions{Path: p})
	if cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("docker: %s: %w", p, fs.ErrNotExist)
	}
	if err != nil {
		return nil, s.p.wrap("stat "+p, err)
	}
	return fileInfo{res.Stat}, nil
}

// Terminate implements sandbox.Sandbox: the container and network go;
// idempotent.
func (s *Sandbox) Terminate(ctx context.Context) error {
	s.mu.Lock()
	s.terminated = true
	s.mu.Unlock()
	return s.g.Terminate(ctx)
}

type fileInfo struct{ st container.PathStat }

func (f fileInfo) Name() string       { return f.st.Name }
func (f fileInfo) Size() int64        { return f.st.Size }
func (f fileInfo) Mode() fs.FileMode  { return f.st.Mode }
func (f fileInfo) ModTime() time.Time { return f.st.Mtime }
func (f fileInfo) IsDir() bool        { return f.st.Mode.IsDir() }
func (f fileInfo) Sys() any           { return nil }

// Sweep implements sandbox.Sweeper: the sandboxes whose creation labels
// include labels are removed whole, even one whose creator died before
// CreateSandbox returned.
func (p *Provider) Sweep(ctx context.Context, labels map[string]string) ([]string, error) {
	ids, err := envdeploy.SweepLabelled(ctx, p, labels)
	if err != nil {
		return ids, fmt.Errorf("docker: sweep: %w", err)
	}
	return ids, nil
}
