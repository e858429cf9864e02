package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/agentenv/agentenv/runner/sandbox"
)

// exitMissing is the exit code the file helpers' scripts use for a
// missing path, told apart from a failing command.
const exitMissing = 66

// exec runs argv in container "main" of Pod pod through the API server
// (WebSocket, falling back to SPDY for older servers). A non-zero exit is
// a result, not an error. Cancelling ctx ends the stream; Kubernetes has
// no way to kill an exec'd process, so it may run on in the Pod.
func (p *Provider) exec(ctx context.Context, pod string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	req := p.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: mainWorkload, Command: argv, Stdin: stdin != nil, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(p.rc, "GET", req.URL().String())
	if err != nil {
		return 0, fmt.Errorf("kubernetes: exec in %s: %w", pod, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(p.rc, "POST", req.URL())
	if err != nil {
		return 0, fmt.Errorf("kubernetes: exec in %s: %w", pod, err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return 0, fmt.Errorf("kubernetes: exec in %s: %w", pod, err)
	}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	var ee utilexec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		return ee.ExitStatus(), nil
	case ctx.Err() != nil:
		return 0, ctx.Err()
	}
	return 0, p.wrap("exec in "+pod, err)
}

// Exec implements sandbox.Sandbox. Env and Dir are applied by sh and env
// in the container (exec has neither), so they need both in the image.
func (s *Sandbox) Exec(ctx context.Context, argv []string, o *sandbox.ExecOptions) (sandbox.ExecResult, error) {
	if err := s.alive(ctx); err != nil {
		return sandbox.ExecResult{}, err
	}
	if len(argv) == 0 {
		return sandbox.ExecResult{}, fmt.Errorf("kubernetes: exec: empty argv")
	}
	var stdin io.Reader
	cmd := argv
	if o != nil {
		stdin = o.Stdin
		if o.Dir != "" || len(o.Env) > 0 {
			dir := "."
			if o.Dir != "" {
				dir = abs(o.Dir)
			}
			keys := make([]string, 0, len(o.Env))
			for k := range o.Env {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			cmd = []string{"sh", "-c", `cd -- "$0" && exec "$@"`, dir, "env"}
			for _, k := range keys {
				cmd = append(cmd, k+"="+o.Env[k])
			}
			cmd = append(cmd, argv...)
		}
	}
	var out, errb bytes.Buffer
	code, err := s.p.exec(ctx, s.pod, cmd, stdin, &out, &errb)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	return sandbox.ExecResult{ExitCode: code, Stdout: out.Bytes(), Stderr: errb.Bytes()}, nil
}

// abs makes a sandbox path absolute: relative paths are under /app.
func abs(p string) string {
	if !path.IsAbs(p) {
		p = path.Join("/app", p)
	}
	return path.Clean(p)
}

// script runs a helper shell script with args and maps exitMissing to
// fs.ErrNotExist.
func (s *Sandbox) script(ctx context.Context, what, p, script string, stdin io.Reader, stdout io.Writer, args ...string) error {
	if err := s.alive(ctx); err != nil {
		return err
	}
	var errb bytes.Buffer
	code, err := s.p.exec(ctx, s.pod, append([]string{"sh", "-c", script, "sh"}, args...), stdin, stdout, &errb)
	switch {
	case err != nil:
		return err
	case code == exitMissing:
		return fmt.Errorf("kubernetes: %s %s: %w", what, p, fs.ErrNotExist)
	case code != 0:
		return fmt.Errorf("kubernetes: %s %s: exit %d: %s", what, p, code, strings.TrimSpace(errb.String()))
	}
	return nil
}

// WriteFile implements sandbox.Sandbox.
func (s *Sandbox) WriteFile(ctx context.Context, p string, r io.Reader, perm fs.FileMode) error {
	p = abs(p)
	if perm == 0 {
		perm = 0o644
	}
	return s.script(ctx, "write", p, `mkdir -p -- "$(dirname -- "$1")" && cat > "$1" && chmod "$2" -- "$1"`, r, io.Discard,
		p, strconv.FormatUint(uint64(perm.Perm()), 8))
}

// ReadFile implements sandbox.Sandbox. The path is resolved by the
// container's kernel, inside its own root file system.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	p = abs(p)
	var out bytes.Buffer
	err := s.script(ctx, "read", p, `test -e "$1" || exit 66; test -f "$1" || { echo "not a regular file" >&2; exit 1; }; exec cat -- "$1"`, nil, &out, p)
	if err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Stat implements sandbox.Sandbox (links followed, as os.Stat does).
func (s *Sandbox) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	p = abs(p)
	var out bytes.Buffer
	if err := s.script(ctx, "stat", p, `test -e "$1" || exit 66; exec stat -L -c '%f %s %Y' -- "$1"`, nil, &out, p); err != nil {
		return nil, err
	}
	f := strings.Fields(out.String())
	if len(f) != 3 {
		return nil, fmt.Errorf("kubernetes: stat %s: unexpected output %q", p, out.String())
	}
	raw, err1 := strconv.ParseUint(f[0], 16, 32)
	size, err2 := strconv.ParseInt(f[1], 10, 64)
	mtime, err3 := strconv.ParseInt(f[2], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("kubernetes: stat %s: %w", p, err)
	}
	return fileInfo{name: path.Base(p), size: size, mode: unixMode(uint32(raw)), mtime: time.Unix(mtime, 0)}, nil
}

// unixMode converts st_mode bits to an fs.FileMode.
func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & 0o170000 {
	case 0o040000:
		mode |= fs.ModeDir
	case 0o120000:
		mode |= fs.ModeSymlink
	case 0o010000:
		mode |= fs.ModeNamedPipe
	case 0o140000:
		mode |= fs.ModeSocket
	case 0o020000:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case 0o060000:
		mode |= fs.ModeDevice
	}
	return mode
}

type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

func (f fileInfo) Name() string       { return f.name }
func (f fileInfo) Size() int64        { return f.size }
func (f fileInfo) Mode() fs.FileMode  { return f.mode }
func (f fileInfo) ModTime() time.Time { return f.mtime }
func (f fileInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fileInfo) Sys() any           { return nil }

// CopyOut implements sandbox.Sandbox: a first exec resolves root (a
// folder that is a link is archived from where it leads), a second streams
// it with tar, and sandbox.ReadTarTree snapshots the archive for
// sandbox.WalkTree, which resolves links with root as the boundary:
// nothing is read from the Pod after the decision.
func (s *Sandbox) CopyOut(ctx context.Context, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
	root = abs(root)
	var out bytes.Buffer
	if err := s.script(ctx, "copy out", root, `r=$(readlink -f -- "$1") && test -d "$r" || exit 66; echo "$r"`, nil, &out, root); err != nil {
		return err
	}
	real := strings.TrimSpace(out.String())
	dirs := []string{root}
	if real != root {
		dirs = append(dirs, real)
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := s.script(ctx, "copy out", root, `cd -- "$(dirname -- "$1")" && exec tar -cf - -- "$(basename -- "$1")"`, nil, pw, real)
		pw.CloseWithError(err)
		done <- err
	}()
	var limit int64
	if o != nil && len(o.Paths) == 0 && o.Skip == nil {
		limit = o.MaxBytes
	}
	t, err := sandbox.ReadTarTree(pr, dirs, limit)
	// A refused archive ends the stream: the exec sees a closed pipe.
	_ = pr.CloseWithError(errors.New("copy out: archive not read further"))
	xerr := <-done
	var big *sandbox.TarTooLargeError
	switch {
	case errors.As(err, &big):
		return sandbox.TooLarge(root, big.Name, limit)
	case xerr != nil && err == nil:
		return xerr
	case err != nil:
		return fmt.Errorf("kubernetes: copy out %s: %w", root, err)
	}
	return sandbox.WalkTree(ctx, t, root, o, fn)
}
