package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentenv/agentenv/runner/sandbox"
)

// CopyOut implements sandbox.Sandbox. The work folder, then root inside
// it, are opened as os.Root: sandbox.WalkTree decides which links may be
// followed, and every read goes through the root, so a link swapped in
// after that decision still cannot lead a read out of root.
func (s *Sandbox) CopyOut(ctx context.Context, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.alive(); err != nil {
		return err
	}
	return CopyOutDir(ctx, s.st.Dir, root, o, fn)
}

// CopyOutDir is CopyOut over the host folder dir taken as a sandbox's
// work folder (/app is dir, like a local sandbox's): for workloads of
// other providers that share a folder on the host, such as the process
// backend's env and agent groups.
func CopyOutDir(ctx context.Context, dir, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	hp, err := resolveIn(dir, root)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, hp)
	if err != nil {
		return fmt.Errorf("local: copy out %s: %w", root, err)
	}
	wf, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("local: copy out %s: %w", root, err)
	}
	defer wf.Close()
	r, err := wf.OpenRoot(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("local: copy out %s: %w", root, err)
		}
		// The folder itself (or a folder on its way) is a link that leaves
		// the work folder.
		if target, lerr := wf.Readlink(rel); lerr == nil {
			return fmt.Errorf("local: copy out %s: the folder is a symlink to %s, outside the sandbox: %w", root, target, sandbox.ErrLinkOutside)
		}
		return fmt.Errorf("local: copy out %s: %w", root, err)
	}
	defer r.Close()
	t := &hostTree{r: r, dirs: []string{hp}}
	if real, err := filepath.EvalSymlinks(hp); err == nil && real != hp {
		t.dirs = append(t.dirs, real)
	}
	return sandbox.WalkTree(ctx, t, root, o, fn)
}

// hostTree is a sandbox.Tree over a host folder opened as an os.Root.
type hostTree struct {
	r    *os.Root
	dirs []string // the folder's host paths (as named, and resolved), for absolute link targets
}

func (t *hostTree) Lstat(name string) (fs.FileMode, error) {
	fi, err := t.r.Lstat(name)
	if err != nil {
		return 0, err
	}
	return fi.Mode(), nil
}

func (t *hostTree) ReadLink(name string) (string, error) { return t.r.Readlink(name) }

func (t *hostTree) ReadDir(name string) ([]string, error) {
	f, err := t.r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

func (t *hostTree) ReadFile(name string) ([]byte, fs.FileMode, error) {
	f, err := t.r.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%w (%s)", sandbox.ErrNotRegular, fi.Mode().Type())
	}
	b, err := io.ReadAll(f)
	return b, fi.Mode(), err
}

// Inside maps an absolute target: the sandbox's processes are host
// processes, so it is a host path.
func (t *hostTree) Inside(target string) (string, bool) {
	target = filepath.Clean(filepath.FromSlash(target))
	for _, d := range t.dirs {
		if target == d {
			return ".", true
		}
		if rest, ok := strings.CutPrefix(target, d+string(filepath.Separator)); ok {
			return filepath.ToSlash(rest), true
		}
	}
	return "", false
}
