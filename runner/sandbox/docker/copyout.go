package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/runner/sandbox"
)

// CopyOut implements sandbox.Sandbox. The archive API hands the folder
// over as one tar stream in which a symlink is a header with no content
// (read as a file it would be empty) and a hard link names an earlier
// entry. The stream is read whole into a tarTree and sandbox.WalkTree
// resolves the links in that snapshot: nothing is read from the container
// after the decision, so there is no window for a swapped link.
func (s *Sandbox) CopyOut(ctx context.Context, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
	if err := s.alive(ctx); err != nil {
		return err
	}
	root = abs(root)
	st, err := s.p.cli.ContainerStatPath(ctx, s.container, client.ContainerStatPathOptions{Path: root})
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: copy out %s: %w", root, fs.ErrNotExist)
	}
	if err != nil {
		return s.p.wrap("copy out "+root, err)
	}
	// A folder that is itself a link is copied from where it leads, inside
	// the container: the engine resolves it within the container's root.
	dirs := []string{root}
	src := root
	if st.Stat.Mode&fs.ModeSymlink != 0 && st.Stat.LinkTarget != "" {
		src = path.Clean(st.Stat.LinkTarget)
		dirs = append(dirs, src)
	}
	res, err := s.p.cli.CopyFromContainer(ctx, s.container, client.CopyFromContainerOptions{SourcePath: src})
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: copy out %s: %w", root, fs.ErrNotExist)
	}
	if err != nil {
		return s.p.wrap("copy out "+root, err)
	}
	defer res.Content.Close()
	if !res.Stat.Mode.IsDir() {
		return fmt.Errorf("docker: copy out %s: not a folder", root)
	}
	t, err := readTarTree(res.Content, dirs)
	if err != nil {
		return fmt.Errorf("docker: copy out %s: %w", root, err)
	}
	return sandbox.WalkTree(ctx, t, root, o, fn)
}

// tarTree is a sandbox.Tree over the archive of one folder.
type tarTree struct {
	dirs    []string             // the folder's container paths, for absolute link targets
	entries map[string]*tarEntry // by name relative to the folder
	kids    map[string][]string  // folder name -> entry names in it
}

type tarEntry struct {
	mode fs.FileMode
	link string // a symlink's target
	data []byte
}

func readTarTree(r io.Reader, dirs []string) (*tarTree, error) {
	t := &tarTree{dirs: dirs, entries: map[string]*tarEntry{".": {mode: fs.ModeDir | 0o755}}, kids: map[string][]string{}}
	tr := tar.NewReader(r)
	top := ""
	rel := func(name string) (string, error) {
		name = strings.TrimSuffix(path.Clean(name), "/")
		first, rest, _ := strings.Cut(name, "/")
		if top == "" {
			top = first
		}
		if first != top || !fs.ValidPath(name) {
			return "", fmt.Errorf("archive entry %q is not in the folder", name)
		}
		if rest == "" {
			return ".", nil
		}
		return rest, nil
	}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		name, err := rel(h.Name)
		if err != nil {
			return nil, err
		}
		e := &tarEntry{mode: h.FileInfo().Mode()}
		switch h.Typeflag {
		case tar.TypeSymlink:
			e.link = h.Linkname
		case tar.TypeLink:
			// A hard link is the entry it names, which came earlier.
			to, err := rel(h.Linkname)
			if err != nil {
				return nil, err
			}
			first, ok := t.entries[to]
			if !ok {
				return nil, fmt.Errorf("archive entry %q is a hard link to %q, which the archive lacks", h.Name, h.Linkname)
			}
			e = first
		case tar.TypeReg:
			if e.data, err = io.ReadAll(tr); err != nil {
				return nil, err
			}
		}
		if name == "." {
			continue
		}
		if _, seen := t.entries[name]; !seen {
			t.addKid(name)
		}
		t.entries[name] = e
	}
	for _, k := range t.kids {
		slices.Sort(k)
	}
	return t, nil
}

// addKid records name in its folder, creating folders the archive did not
// list first.
func (t *tarTree) addKid(name string) {
	dir := path.Dir(name)
	if _, ok := t.entries[dir]; !ok {
		t.entries[dir] = &tarEntry{mode: fs.ModeDir | 0o755}
		t.addKid(dir)
	}
	t.kids[dir] = append(t.kids[dir], path.Base(name))
}

func (t *tarTree) Lstat(name string) (fs.FileMode, error) {
	e, ok := t.entries[name]
	if !ok {
		return 0, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	return e.mode, nil
}

func (t *tarTree) ReadLink(name string) (string, error) {
	e, ok := t.entries[name]
	if !ok || e.mode&fs.ModeSymlink == 0 {
		return "", fmt.Errorf("%s: not a symlink", name)
	}
	return e.link, nil
}

func (t *tarTree) ReadDir(name string) ([]string, error) {
	e, ok := t.entries[name]
	if !ok || !e.mode.IsDir() {
		return nil, fmt.Errorf("%s: not a folder", name)
	}
	return t.kids[name], nil
}

func (t *tarTree) ReadFile(name string) ([]byte, fs.FileMode, error) {
	e, ok := t.entries[name]
	if !ok || !e.mode.IsRegular() {
		return nil, 0, fmt.Errorf("%s: %w", name, sandbox.ErrNotRegular)
	}
	return e.data, e.mode, nil
}

// Inside maps an absolute target: a container path.
func (t *tarTree) Inside(target string) (string, bool) {
	for _, d := range t.dirs {
		if target == d {
			return ".", true
		}
		if rest, ok := strings.CutPrefix(target, strings.TrimSuffix(d, "/")+"/"); ok {
			return rest, true
		}
	}
	return "", false
}
