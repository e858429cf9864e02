package sandbox

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
)

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

// TarTooLargeError is an archive past its limit at file Name.
type TarTooLargeError struct{ Name string }

func (e *TarTooLargeError) Error() string { return "archive too large at " + e.Name }

// ReadTarTree reads the archive of one folder (its entries named
// "<folder>/..." as docker cp and tar -C parent -c folder write them) into
// a Tree for WalkTree. dirs are the folder's sandbox paths, against which
// absolute link targets are matched. limit > 0 bounds the total size of
// its regular files (a *TarTooLargeError past it). The archive is read
// whole first, so WalkTree decides on a snapshot: nothing is read from
// the sandbox after the decision.
func ReadTarTree(r io.Reader, dirs []string, limit int64) (Tree, error) {
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
				return nil, &TarTooLargeError{Name: name}
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
		return nil, 0, fmt.Errorf("%s: %w", name, ErrNotRegular)
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
