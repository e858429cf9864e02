package plugin

import (
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"
)

// mountFS is a read-only tree whose top-level folders are other trees:
// the installed bundle packages, built-in and plugin ones side by side,
// as bundle.Installed and bundle.Locate expect (<package>/<bundle>/).
type mountFS struct {
	names []string
	subs  map[string]fs.FS
}

func (m *mountFS) mount(name string, sub fs.FS) {
	if _, dup := m.subs[name]; !dup {
		m.names = append(m.names, name)
		sort.Strings(m.names)
	}
	m.subs[name] = sub
}

func (m *mountFS) split(op, name string) (fs.FS, string, error) {
	if !fs.ValidPath(name) {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	first, rest, _ := strings.Cut(name, "/")
	sub, ok := m.subs[first]
	if !ok {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	if rest == "" {
		rest = "."
	}
	return sub, rest, nil
}

// Open implements fs.FS.
func (m *mountFS) Open(name string) (fs.File, error) {
	if name == "." {
		ents, _ := m.ReadDir(".")
		return &rootDir{ents: ents}, nil
	}
	sub, rest, err := m.split("open", name)
	if err != nil {
		return nil, err
	}
	f, err := sub.Open(rest)
	if err != nil || rest != "." {
		return f, err
	}
	return &mountPoint{File: f, name: name}, nil
}

// mountPoint is the opened root of a mounted tree: its Stat carries the
// mount name rather than ".".
type mountPoint struct {
	fs.File
	name string
}

func (p *mountPoint) Stat() (fs.FileInfo, error) { return dirInfo(p.name), nil }

// ReadDir implements fs.ReadDirFile.
func (p *mountPoint) ReadDir(n int) ([]fs.DirEntry, error) {
	if d, ok := p.File.(fs.ReadDirFile); ok {
		return d.ReadDir(n)
	}
	return nil, &fs.PathError{Op: "readdir", Path: p.name, Err: fs.ErrInvalid}
}

// ReadDir implements fs.ReadDirFS.
func (m *mountFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name == "." {
		out := make([]fs.DirEntry, 0, len(m.names))
		for _, n := range m.names {
			out = append(out, fs.FileInfoToDirEntry(dirInfo(n)))
		}
		return out, nil
	}
	sub, rest, err := m.split("readdir", name)
	if err != nil {
		return nil, err
	}
	return fs.ReadDir(sub, rest)
}

// dirInfo describes a mount point.
type dirInfo string

func (d dirInfo) Name() string       { return string(d) }
func (d dirInfo) Size() int64        { return 0 }
func (d dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o555 }
func (d dirInfo) ModTime() time.Time { return time.Time{} }
func (d dirInfo) IsDir() bool        { return true }
func (d dirInfo) Sys() any           { return nil }

// rootDir is the opened root of a mountFS.
type rootDir struct {
	ents []fs.DirEntry
	off  int
}

func (d *rootDir) Stat() (fs.FileInfo, error) { return dirInfo("."), nil }
func (d *rootDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: ".", Err: fs.ErrInvalid}
}
func (d *rootDir) Close() error { return nil }

// ReadDir implements fs.ReadDirFile.
func (d *rootDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.ents[d.off:]
	if n <= 0 {
		d.off = len(d.ents)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if n > len(rest) {
		n = len(rest)
	}
	d.off += n
	return rest[:n], nil
}
