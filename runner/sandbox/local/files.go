package local

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentenv/agentenv/runner/sandbox"
)

// resolve maps a sandbox path to a host path inside the work folder: /app
// (and relative paths) map to the folder itself; any other absolute path P
// maps to <folder>/P, so nothing outside the folder is ever touched.
func (s *Sandbox) resolve(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("local: empty path")
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("local: path %q contains NUL", p)
	}
	if !path.IsAbs(p) {
		p = "/app/" + p
	}
	p = path.Clean(p)
	if p == "/app" || strings.HasPrefix(p, "/app/") {
		p = strings.TrimPrefix(p, "/app")
	}
	return filepath.Join(s.st.Dir, filepath.FromSlash(p)), nil
}

// HostPath is where a sandbox path lives on the host.
func (s *Sandbox) HostPath(p string) (string, error) { return s.resolve(p) }

// WriteFile implements sandbox.Sandbox.
func (s *Sandbox) WriteFile(ctx context.Context, p string, r io.Reader, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.alive(); err != nil {
		return err
	}
	hp, err := s.resolve(p)
	if err != nil {
		return err
	}
	if perm == 0 {
		perm = 0o644
	}
	if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
		return fmt.Errorf("local: write %s: %w", p, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(hp), ".write-*")
	if err != nil {
		return fmt.Errorf("local: write %s: %w", p, err)
	}
	_, err = io.Copy(tmp, ctxReader{ctx, r})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), perm)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), hp)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("local: write %s: %w", p, err)
	}
	return nil
}

// ReadFile implements sandbox.Sandbox. It reads through CopyOut with the
// work folder as the boundary, so a symlink the agent planted can lead
// only to another file of the sandbox, never to a host file.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	hp, err := s.resolve(p)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(s.st.Dir, hp)
	if err != nil || rel == "." {
		return nil, fmt.Errorf("local: read %s: not a file", p)
	}
	var b []byte
	err = s.CopyOut(ctx, "/app", &sandbox.CopyOutOptions{Paths: []string{filepath.ToSlash(rel)}}, func(f sandbox.File) error {
		b = f.Data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("local: read %s: %w", p, err)
	}
	return b, nil
}

// Stat implements sandbox.Sandbox.
func (s *Sandbox) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.alive(); err != nil {
		return nil, err
	}
	hp, err := s.resolve(p)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(hp)
	if err != nil {
		return nil, fmt.Errorf("local: stat %s: %w", p, err)
	}
	return fi, nil
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
