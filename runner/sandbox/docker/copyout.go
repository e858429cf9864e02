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

	"github.com/agentenv/agentenv/runner/envdeploy"
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
	return s.p.copyOut(ctx, s.container, root, o, fn)
}

// copyOut is CopyOut from container (an id or name).
func (p *Provider) copyOut(ctx context.Context, container, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
	root = abs(root)
	st, err := p.cli.ContainerStatPath(ctx, container, client.ContainerStatPathOptions{Path: root})
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: copy out %s: %w", root, fs.ErrNotExist)
	}
	if err != nil {
		return p.wrap("copy out "+root, err)
	}
	// A folder that is itself a link is copied from where it leads, inside
	// the container: the engine resolves it within the container's root.
	dirs := []string{root}
	src := root
	if st.Stat.Mode&fs.ModeSymlink != 0 && st.Stat.LinkTarget != "" {
		src = path.Clean(st.Stat.LinkTarget)
		dirs = append(dirs, src)
	}
	res, err := p.cli.CopyFromContainer(ctx, container, client.CopyFromContainerOptions{SourcePath: src})
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: copy out %s: %w", root, fs.ErrNotExist)
	}
	if err != nil {
		return p.wrap("copy out "+root, err)
	}
	defer res.Content.Close()
	if !res.Stat.Mode.IsDir() {
		return fmt.Errorf("docker: copy out %s: not a folder", root)
	}
	// Without a filter every file of the archive is handed over, so an
	// archive past MaxBytes fails the copy as it is read, before it is
	// held whole.
	var limit int64
	if o != nil && len(o.Paths) == 0 && o.Skip == nil {
		limit = o.MaxBytes
	}
	t, err := readTarTree(res.Content, dirs, limit)
	var big *tarTooLarge
	if errors.As(err, &big) {
		return sandbox.TooLarge(root, big.name, limit)
	}
	if err != nil {
		return fmt.Errorf("docker: copy out %s: %w", root, err)
	}
	return sandbox.WalkTree(ctx, t, root, o, fn)
}

var _ envdeploy.FileGroup = (*Group)(nil)

// CopyOut implements envdeploy.FileGroup: the files of an agent or env
// group are in the container of its workload, as Sandbox.CopyOut reads
// them. The gateway holds no files of the env, so an env group's files
// are those of its server; with several servers, root must exist in
// exactly one of them (which one is named in the error otherwise).
func (g *Group) CopyOut(ctx context.Context, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cs, err := g.p.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: labelFilter(envdeploy.LabelSandbox, g.id)})
	if err != nil {
		return g.p.wrap("list containers", err)
	}
	var names, ids []string
	for _, c := range cs.Items {
		if c.Labels[envdeploy.LabelRole] == "gateway" {
			continue
		}
		names, ids = append(names, c.Labels[labelWorkload]), append(ids, c.ID)
	}
	if len(ids) == 0 {
		return fmt.Errorf("docker group %s: no workload to copy out of: %w", g.id, envdeploy.ErrNotFound)
	}
	if len(ids) == 1 {
		return g.p.copyOut(ctx, ids[0], root, o, fn)
	}
	var have []int
	for i, id := range ids {
		_, err := g.p.cli.ContainerStatPath(ctx, id, client.ContainerStatPathOptions{Path: abs(root)})
		switch {
		case err == nil:
			have = append(have, i)
		case !cerrdefs.IsNotFound(err):
			return g.p.wrap("copy out "+abs(root), err)
		}
	}
	switch len(have) {
	case 0:
		return fmt.Errorf("docker: copy out %s: in none of %s: %w", abs(root), strings.Join(names, ", "), fs.ErrNotExist)
	case 1:
		return g.p.copyOut(ctx, ids[have[0]], root, o, fn)
	}
	var both []string
	for _, i := range have {
		both = append(both, names[i])
	}
	slices.Sort(both)
	return fmt.Errorf("docker: copy out %s: the folder exists in several workloads of group %s (%s); collect from a one-server env", abs(root), g.id, strings.Join(both, ", "))
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

// tarTooLarge is an archive past its limit at file name.
type tarTooLarge struct{ name string }

func (e *tarTooLarge) Error() string { return "archive too large at " + e.name }

// readTarTree reads the archive into a tarTree; limit > 0 bounds the
// total size of its regular files (a *tarTooLarge past it).
func readTarTree(r io.Reader, dirs []string, limit int64) (*tarTree, error) {
	var total int64
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
			if total += h.Size; limit > 0 && total > limit {
				return nil, &tarTooLarge{name: name}
			}
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
