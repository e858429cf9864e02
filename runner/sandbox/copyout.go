package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Copying files out of a sandbox (Sandbox.CopyOut). A sandbox's files are
// written by the agent, so a symlink in them is untrusted: copied naively it
// would carry host files (a local work folder is a host folder) or nothing
// at all (an archive's link entry) into the artifact store. CopyOut
// therefore resolves every link itself, with the copied folder as the
// boundary, through WalkTree below; each provider supplies only a Tree, its
// view of that folder.

// Errors of CopyOut that callers branch on; each comes inside a *LinkError
// naming the link.
var (
	// ErrLinkOutside is a symlink that resolves outside the copied folder.
	ErrLinkOutside = errors.New("resolves outside the copied folder")
	// ErrLinkLoop is a chain of more than maxLinkHops symlinks, or a link to
	// a folder that contains the link (walking it would never end).
	ErrLinkLoop = errors.New("is a symlink loop")
	// ErrNotRegular is an entry that is neither a folder, a regular file nor
	// a symlink to one of those (a socket, a FIFO, a device).
	ErrNotRegular = errors.New("not a regular file or folder")
	// ErrTooLarge is a copy whose files add up to more than
	// CopyOutOptions.MaxBytes.
	ErrTooLarge = errors.New("copy exceeds its size limit")
)

// maxLinkHops bounds link chains, as Linux's 40-link limit does.
const maxLinkHops = 40

// LinkError is a symlink that CopyOut refused.
type LinkError struct {
	Root   string // the sandbox folder being copied
	Path   string // the link, a slash path relative to Root
	Target string // the link's target, as stored in the link
	Err    error  // ErrLinkOutside, ErrLinkLoop, or one wrapping fs.ErrNotExist (a dangling link)
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("symlink %s -> %s: %v", path.Join(e.Root, e.Path), e.Target, e.Err)
}

func (e *LinkError) Unwrap() error { return e.Err }

// File is one file copied out of a sandbox.
type File struct {
	// Path is the slash path relative to the copied folder under which the
	// file was named or found; a file reached through a symlink has the
	// link's path, not its target's.
	Path string
	Data []byte
	Mode fs.FileMode // the permission bits of the file read
}

// CopyOutOptions tunes CopyOut; nil means every file under the folder.
type CopyOutOptions struct {
	// Paths names the files to copy, slash paths relative to the folder
	// (no "..", not absolute), in this order. Empty means every file under
	// the folder, walked in lexical order.
	Paths []string
	// Skip, when set, is asked about every path that is not a folder
	// (files and symlinks, before a link is resolved); true leaves the path
	// out, and a skipped link is never resolved.
	Skip func(rel string) bool
	// MaxBytes bounds the total size of the files handed to fn (a file
	// reached through two links counts twice); past it the copy fails with
	// an error wrapping ErrTooLarge that names the file and the limit, and
	// fn is not called for that file. 0 means no bound.
	MaxBytes int64
}

// TooLarge is the error of a copy of root past max bytes at file rel.
func TooLarge(root, rel string, max int64) error {
	return fmt.Errorf("copy out %s: %w: the files up to %s exceed %d bytes", root, ErrTooLarge, rel, max)
}

// Tree is a provider's view of the folder being copied, for WalkTree.
// Names are slash paths relative to the folder ("." is the folder itself).
// WalkTree resolves links itself: it asks ReadDir and ReadFile only about
// names it has resolved, and Lstat and ReadLink about names whose
// folders it has resolved. An implementation must still never reach
// outside the folder, whatever the name, so that a link swapped in between
// two calls cannot lead a read out (the check and the read are not one
// system call on a live file system).
type Tree interface {
	// Lstat gives the type of name, not following a final symlink; a
	// missing name wraps fs.ErrNotExist.
	Lstat(name string) (fs.FileMode, error)
	// ReadLink gives the target of the symlink name, as stored.
	ReadLink(name string) (string, error)
	// ReadDir lists the names in the folder name.
	ReadDir(name string) ([]string, error)
	// ReadFile reads the regular file name; anything else is an error.
	ReadFile(name string) ([]byte, fs.FileMode, error)
	// Inside maps an absolute link target (as the sandbox's processes see
	// paths) to a name below the folder; ok is false when the target lies
	// outside it.
	Inside(target string) (name string, ok bool)
}

// WalkTree implements CopyOut for a provider over its Tree t of the
// sandbox folder root (root is used in messages only). Every symlink is
// resolved with the folder as the boundary: a link that resolves to a file
// inside is copied under the link's path with the target's content, a link
// to a folder inside is walked as that folder (when walking), and a link
// that resolves outside the folder, dangles, or loops fails the whole copy
// with a *LinkError naming it. fn is called once per file; an error from
// fn stops the walk and is returned.
func WalkTree(ctx context.Context, t Tree, root string, o *CopyOutOptions, fn func(File) error) error {
	var opts CopyOutOptions
	if o != nil {
		opts = *o
	}
	w := &walker{ctx: ctx, t: t, root: root, skip: opts.Skip, fn: fn, max: opts.MaxBytes}
	if len(opts.Paths) == 0 {
		return w.walkDir(".", ".", []string{"."})
	}
	for _, p := range opts.Paths {
		if p == "" || path.IsAbs(p) || !fs.ValidPath(path.Clean(p)) || path.Clean(p) == "." {
			return fmt.Errorf("copy out of %s: path %q must be relative to the folder, without '..'", root, p)
		}
		p = path.Clean(p)
		if w.skip != nil && w.skip(p) {
			continue
		}
		real, mode, err := w.resolve(p)
		if err != nil {
			return err
		}
		if mode.IsDir() {
			return fmt.Errorf("copy out %s: is a folder, not a file", path.Join(root, p))
		}
		if err := w.emit(p, real, mode); err != nil {
			return err
		}
	}
	return nil
}

type walker struct {
	ctx  context.Context
	t    Tree
	root string
	skip func(string) bool
	fn   func(File) error
	max  int64 // MaxBytes
	used int64 // bytes handed to fn so far
}

func (w *walker) linkErr(link, target string, err error) error {
	return &LinkError{Root: w.root, Path: link, Target: target, Err: err}
}

// resolve follows name through every symlink on its way and returns the
// link-free name it reaches and that entry's type. It never leaves the
// folder: ".." above it, or an absolute target outside it, is
// ErrLinkOutside, blamed on the last link followed.
func (w *walker) resolve(name string) (string, fs.FileMode, error) {
	queue := strings.Split(name, "/")
	cur := "."
	// The last link followed, for errors, and how many queued names
	// follow its target's (a failure within the target is the link's).
	var link, target string
	tail := 0
	hops := 0
	var mode fs.FileMode = fs.ModeDir
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if cur == "." {
				return "", 0, w.linkErr(link, target, ErrLinkOutside)
			}
			cur = path.Dir(cur)
			mode = fs.ModeDir
			continue
		}
		if !mode.IsDir() {
			// A file used as a folder on the way.
			err := fmt.Errorf("%s: not a folder: %w", path.Join(w.root, cur), fs.ErrNotExist)
			return "", 0, w.missing(name, link, target, len(queue) >= tail, err)
		}
		next := path.Join(cur, c)
		m, err := w.t.Lstat(next)
		if err != nil {
			return "", 0, w.missing(name, link, target, len(queue) >= tail, err)
		}
		if m&fs.ModeSymlink == 0 {
			cur, mode = next, m
			continue
		}
		tgt, err := w.t.ReadLink(next)
		if err != nil {
			return "", 0, fmt.Errorf("copy out %s: %w", path.Join(w.root, next), err)
		}
		link, target, tail = next, tgt, len(queue)
		if hops++; hops > maxLinkHops {
			return "", 0, w.linkErr(link, target, ErrLinkLoop)
		}
		rest := strings.Split(tgt, "/")
		if path.IsAbs(tgt) {
			in, ok := w.t.Inside(path.Clean(tgt))
			if !ok {
				return "", 0, w.linkErr(link, target, ErrLinkOutside)
			}
			cur, mode, rest = ".", fs.ModeDir, strings.Split(in, "/")
		}
		queue = append(rest, queue...)
	}
	return cur, mode, nil
}

// missing reports a name that is not there: a dangling link when it was
// met within a link's target, a plain missing path otherwise.
func (w *walker) missing(name, link, target string, inLink bool, err error) error {
	if link != "" && inLink {
		return w.linkErr(link, target, fmt.Errorf("dangles: %w", err))
	}
	return fmt.Errorf("copy out %s: %w", path.Join(w.root, name), err)
}

// walkDir walks the link-free folder real, found under the path shown;
// stack holds the link-free folders being walked, to catch a folder link
// that leads back into one of them.
func (w *walker) walkDir(real, shown string, stack []string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	names, err := w.t.ReadDir(real)
	if err != nil {
		return fmt.Errorf("copy out %s: %w", path.Join(w.root, shown), err)
	}
	for _, n := range names {
		r, s := path.Join(real, n), path.Join(shown, n)
		m, err := w.t.Lstat(r)
		if err != nil {
			return fmt.Errorf("copy out %s: %w", path.Join(w.root, s), err)
		}
		if m.IsDir() {
			if err := w.walkDir(r, s, append(stack, r)); err != nil {
				return err
			}
			continue
		}
		if w.skip != nil && w.skip(s) {
			continue
		}
		if m&fs.ModeSymlink == 0 {
			if err := w.emit(s, r, m); err != nil {
				return err
			}
			continue
		}
		to, tm, err := w.resolve(r)
		if err != nil {
			return err
		}
		if !tm.IsDir() {
			if err := w.emit(s, to, tm); err != nil {
				return err
			}
			continue
		}
		for _, d := range stack {
			if to == "." || to == d || strings.HasPrefix(d, to+"/") {
				target, _ := w.t.ReadLink(r)
				return w.linkErr(r, target, ErrLinkLoop)
			}
		}
		if err := w.walkDir(to, s, append(stack, to)); err != nil {
			return err
		}
	}
	return nil
}

// emit reads the link-free file real and hands it to fn as shown.
func (w *walker) emit(shown, real string, mode fs.FileMode) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if !mode.IsRegular() {
		return fmt.Errorf("copy out %s: %w (%s)", path.Join(w.root, shown), ErrNotRegular, mode.Type())
	}
	b, perm, err := w.t.ReadFile(real)
	if err != nil {
		return fmt.Errorf("copy out %s: %w", path.Join(w.root, shown), err)
	}
	if w.used += int64(len(b)); w.max > 0 && w.used > w.max {
		return TooLarge(w.root, shown, w.max)
	}
	return w.fn(File{Path: shown, Data: b, Mode: perm.Perm()})
}
