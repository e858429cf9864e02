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
func (s *Sandbox) resolve(p string) (string, error) { return resolveIn(s.st.Dir, p) }

// resolveIn maps sandbox path p into the work folder dir.
func resolveIn(dir, p string) (string, error) {
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
	return filepath.Join(dir, filepath.FromSlash(p)), nil
}

// HostPath is where a sandbox path lives on the host.
func (s *Sandbox) HostPath(p string) (string, error) { return s.resolve(p) }

// WriteFile implements sandbox.Sandbox. Every step goes through the work
// folder opened as an os.Root, so a symlink the agent planted on the way
// (say /app/in -> /home/user) cannot make the write land on the host.
func (s *Sandbox) WriteFile(ctx context.Context, p string, r io.Reader, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.alive(); err != nil {
		return err
	}
	rel, err := s.relPath(p)
	if err != nil {
		return err
	}
	if perm == 0 {
		perm = 0o644
	}
	root, err := os.OpenRoot(s.st.Dir)
	if err != nil {
		return fmt.Errorf("local: write %s: %w", p, err)
	}
	defer root.Close()
	dir := filepath.Dir(rel)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("local: write %s: %w", p, err)
	}
	tmpName := filepath.Join(dir, ".write-"+randHex(8))
	tmp, err := root.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("local: write %s: %w", p, err)
	}
	_, err = io.Copy(tmp, ctxReader{ctx, r})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chmod(tmpName, perm)
	}
	if err == nil {
		// Rename replaces a link at the destination; it never follows it.
		err = root.Rename(tmpName, rel)
	}
	if err != nil {
		_ = root.Remove(tmpName)
		return fmt.Errorf("local: write %s: %w", p, err)
	}
	return nil
}

// relPath is p relative to the work folder; the folder itself is refused.
func (s *Sandbox) relPath(p string) (string, error) {
	hp, err := s.resolve(p)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(s.st.Dir, hp)
	if err != nil || rel == "." {
		return "", fmt.Errorf("local: %s: not a file path", p)
	}
	return rel, nil
}

// ReadFile implements sandbox.Sandbox. It reads through CopyOut with the
// work folder as the boundary, so a symlink the agent planted can lead
// only to another file of the sandbox, never to a host file.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	rel, err := s.relPath(p)
	if err != nil {
		return nil, err
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

// Stat implements sandbox.Sandbox. Links are followed only within the
// work folder, so a probe cannot tell whether a host path exists.
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
	rel, err := filepath.Rel(s.st.Dir, hp)
	if err != nil {
		return nil, fmt.Errorf("local: stat %s: %w", p, err)
	}
	root, err := os.OpenRoot(s.st.Dir)
	if err != nil {
		return nil, fmt.Errorf("local: stat %s: %w", p, err)
	}
	defer root.Close()
	fi, err := root.Stat(rel)
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
