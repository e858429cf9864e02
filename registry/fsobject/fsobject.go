// Package fsobject is the local ObjectStore: one directory tree, objects
// at <root>/<key>, object URLs file://<absolute path>.
// The default root is <state root>/object_store.
//
// Writes are atomic and write-once: bytes go to <root>/.agentenv-tmp/,
// are fsynced, and are then hard-linked to the final path (link fails if
// the key exists, which is what makes "write-once" race-free) or renamed
// over it when overwriting is asked for. A writer killed mid-write leaves
// only a temporary file, which is never visible as an object and is swept
// on the next New. Content types live in <root>/.agentenv-meta/<key>.json
// sidecars.
//
// No call follows a symlink inside the store: each path component under
// the root is checked with lstat first (a symlink is refused with an
// *InvalidError naming the key and the component), and the file system
// calls themselves go through an os.Root with O_NOFOLLOW on the object, so
// a symlink planted between the check and the call still cannot make the
// store create, write, read or remove anything outside its directory.
//
//	objs, err := fsobject.New("", nil)
//	info, err := registry.PutBytes(ctx, objs, "artifacts/file/hello/1/hello.txt", b, nil)
//	info.URL // file:///home/me/.local/state/agent-env/object_store/artifacts/file/hello/1/hello.txt
package fsobject

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentenv/agentenv/registry"
)

const (
	tmpDir  = ".agentenv-tmp"
	metaDir = ".agentenv-meta"
)

// Options tunes New. A nil *Options means defaults.
type Options struct {
	// StaleTemp is the age after which leftover temporary files (from
	// crashed writers) are removed by New; 0 = 1 hour.
	StaleTemp time.Duration
}

// Store is the filesystem ObjectStore.
type Store struct {
	root string // absolute, symlinks resolved
}

var _ registry.ObjectStore = (*Store)(nil)

// DefaultRoot is <state root>/object_store.
func DefaultRoot() (string, error) {
	root, err := registry.StateRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "object_store"), nil
}

// New opens (creating if needed) the store rooted at root ("" = DefaultRoot).
func New(root string, o *Options) (*Store, error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.StaleTemp <= 0 {
		opt.StaleTemp = time.Hour
	}
	if root == "" {
		r, err := DefaultRoot()
		if err != nil {
			return nil, err
		}
		state, _ := registry.StateRoot()
		if err := registry.EnsureStateDir(state, r); err != nil {
			return nil, err
		}
		root = r
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("object store %s: %w: %v", abs, registry.ErrUnavailable, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", abs, err)
	}
	s := &Store{root: real}
	for _, d := range []string{tmpDir, metaDir} {
		if err := s.mkdirs(d, d); err != nil {
			return nil, fmt.Errorf("object store %s: %w", real, err)
		}
	}
	s.sweep(opt.StaleTemp)
	return s, nil
}

// Root is the store's directory.
func (s *Store) Root() string { return s.root }

func (s *Store) sweep(age time.Duration) {
	r, err := s.openRoot()
	if err != nil {
		return
	}
	defer r.Close()
	d, err := r.Open(tmpDir)
	if err != nil {
		return
	}
	entries, _ := d.ReadDir(-1)
	d.Close()
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > age {
			_ = r.Remove(tmpDir + "/" + e.Name())
		}
	}
}

func (s *Store) pathOf(key string) string { return filepath.Join(s.root, filepath.FromSlash(key)) }

// openRoot opens the store directory as an os.Root: calls made through it
// never resolve outside the directory, whatever a symlink says.
func (s *Store) openRoot() (*os.Root, error) {
	r, err := os.OpenRoot(s.root)
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w: %v", s.root, registry.ErrUnavailable, err)
	}
	return r, nil
}

// noSymlink refuses rel (a slash path under the root) when one of its
// existing components is a symlink; the walk stops at the first missing
// component or file. key is what the error names.
func (s *Store) noSymlink(key, rel string) error {
	p := s.root
	for _, seg := range strings.Split(rel, "/") {
		p = filepath.Join(p, seg)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil // missing: created as a directory, or not found
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			comp, _ := filepath.Rel(s.root, p)
			return &registry.InvalidError{Field: "key", Value: key,
				Reason: "path component " + filepath.ToSlash(comp) + " is a symlink (the object store never follows one)"}
		}
		if !fi.IsDir() {
			return nil
		}
	}
	return nil
}

// rootErr turns the error of an os.Root call on rel into the store's
// errors: a symlink on the way (planted after noSymlink looked) is named.
func (s *Store) rootErr(key, rel, what string, err error) error {
	if serr := s.noSymlink(key, rel); serr != nil {
		return serr
	}
	return fmt.Errorf("object %s: %s: %w", key, what, err)
}

// mkdirs creates directory rel (a slash path) and its parents under the
// root, refusing symlinks on the way.
func (s *Store) mkdirs(key, rel string) error {
	if err := s.noSymlink(key, rel); err != nil {
		return err
	}
	r, err := s.openRoot()
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.MkdirAll(rel, 0o700); err != nil {
		return s.rootErr(key, rel, "create directory", err)
	}
	return nil
}

type meta struct {
	ContentType string `json:"content_type,omitempty"`
	Encoding    string `json:"encoding,omitempty"`
}

// ctxReader stops a copy when ctx ends.
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

// Put writes r under key atomically; write-once unless o.Overwrite.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, o *registry.ObjectPutOptions) (registry.ObjectInfo, error) {
	opt, err := registry.CheckPut(key, r, o)
	if err != nil {
		return registry.ObjectInfo{}, err
	}
	if err := s.noSymlink(key, key); err != nil {
		return registry.ObjectInfo{}, err
	}
	if !opt.Overwrite {
		if _, err := os.Lstat(s.pathOf(key)); err == nil {
			return registry.ObjectInfo{}, fmt.Errorf("object %s: %w (pass Overwrite to replace it)", key, registry.ErrAlreadyExists)
		}
	}
	root, err := s.openRoot()
	if err != nil {
		return registry.ObjectInfo{}, err
	}
	defer root.Close()
	tmp, err := os.CreateTemp(filepath.Join(s.root, tmpDir), "put-*")
	if err != nil {
		return registry.ObjectInfo{}, fmt.Errorf("object %s: %w: %v", key, registry.ErrUnavailable, err)
	}
	tmpRel := tmpDir + "/" + filepath.Base(tmp.Name())
	defer root.Remove(tmpRel) // after a link the object keeps its own name
	_, err = io.Copy(tmp, ctxReader{ctx, r})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return registry.ObjectInfo{}, fmt.Errorf("write object %s: %w", key, err)
	}
	if dir := path.Dir(key); dir != "." {
		if err := s.mkdirs(key, dir); err != nil {
			return registry.ObjectInfo{}, err
		}
	}
	if opt.Overwrite {
		err = root.Rename(tmpRel, key)
	} else {
		err = root.Link(tmpRel, key)
		if errors.Is(err, fs.ErrExist) {
			return registry.ObjectInfo{}, fmt.Errorf("object %s: %w (pass Overwrite to replace it)", key, registry.ErrAlreadyExists)
		}
	}
	if err != nil {
		return registry.ObjectInfo{}, s.rootErr(key, key, "publish", err)
	}
	if err := s.writeMeta(root, key, meta{ContentType: opt.ContentType, Encoding: opt.Encoding}); err != nil {
		return registry.ObjectInfo{}, err
	}
	return s.Stat(ctx, key)
}

// metaRel is the sidecar of key, relative to the root.
func metaRel(key string) string { return metaDir + "/" + key + ".json" }

func (s *Store) writeMeta(root *os.Root, key string, m meta) error {
	p := metaRel(key)
	if m == (meta{}) {
		if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return s.rootErr(key, p, "metadata", err)
		}
		return nil
	}
	b, _ := json.Marshal(m)
	if err := s.mkdirs(key, path.Dir(p)); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Join(s.root, tmpDir), "meta-*")
	if err != nil {
		return fmt.Errorf("object %s metadata: %w", key, err)
	}
	tmpRel := tmpDir + "/" + filepath.Base(tmp.Name())
	defer root.Remove(tmpRel)
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("object %s metadata: %w", key, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("object %s metadata: %w", key, err)
	}
	if err := root.Rename(tmpRel, p); err != nil {
		return s.rootErr(key, p, "metadata", err)
	}
	return nil
}

func (s *Store) info(root *os.Root, key string, fi os.FileInfo) registry.ObjectInfo {
	var m meta
	if s.noSymlink(key, metaRel(key)) == nil {
		if b, err := root.ReadFile(metaRel(key)); err == nil {
			_ = json.Unmarshal(b, &m)
		}
	}
	if m.ContentType == "" {
		m.ContentType = registry.GuessContentType(key)
	}
	return registry.ObjectInfo{Key: key, URL: s.URL(key), Size: fi.Size(), ContentType: m.ContentType,
		Encoding: m.Encoding, LastModified: fi.ModTime().UTC()}
}

// regular checks that key names a regular file reached without a symlink.
func (s *Store) regular(root *os.Root, key string) (os.FileInfo, error) {
	if err := registry.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := s.noSymlink(key, key); err != nil {
		return nil, err
	}
	fi, err := root.Lstat(key)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscallENOTDIR) || (err == nil && fi.IsDir()) {
		return nil, &registry.NotFoundError{Kind: "object", ID: key}
	}
	if err != nil {
		return nil, s.rootErr(key, key, "stat", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &registry.InvalidError{Field: "key", Value: key, Reason: "not a regular file (symlinks are refused)"}
	}
	return fi, nil
}

// Open opens an object for reading.
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, registry.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, registry.ObjectInfo{}, err
	}
	root, err := s.openRoot()
	if err != nil {
		return nil, registry.ObjectInfo{}, err
	}
	defer root.Close()
	fi, err := s.regular(root, key)
	if err != nil {
		return nil, registry.ObjectInfo{}, err
	}
	f, err := root.OpenFile(key, os.O_RDONLY|syscallONOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, registry.ObjectInfo{}, &registry.NotFoundError{Kind: "object", ID: key}
	}
	if err != nil {
		return nil, registry.ObjectInfo{}, s.rootErr(key, key, "open", err)
	}
	return f, s.info(root, key, fi), nil
}

// Stat returns an object's metadata.
func (s *Store) Stat(ctx context.Context, key string) (registry.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return registry.ObjectInfo{}, err
	}
	root, err := s.openRoot()
	if err != nil {
		return registry.ObjectInfo{}, err
	}
	defer root.Close()
	fi, err := s.regular(root, key)
	if err != nil {
		return registry.ObjectInfo{}, err
	}
	return s.info(root, key, fi), nil
}

// Exists reports whether key holds an object.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	_, err := s.Stat(ctx, key)
	if errors.Is(err, registry.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Delete removes the object at key and its metadata; a missing object is
// *NotFoundError. Emptied directories are left: a concurrent Put may be
// about to link into them.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	root, err := s.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	if _, err := s.regular(root, key); err != nil {
		return err
	}
	if err := root.Remove(key); errors.Is(err, fs.ErrNotExist) {
		return &registry.NotFoundError{Kind: "object", ID: key}
	} else if err != nil {
		return s.rootErr(key, key, "delete", err)
	}
	if err := s.writeMeta(root, key, meta{}); err != nil {
		return err
	}
	return nil
}

// List returns the objects under prefix, sorted by key.
func (s *Store) List(ctx context.Context, prefix string) ([]registry.ObjectInfo, error) {
	if err := registry.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	root, err := s.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	start := s.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		if err := s.noSymlink(prefix, prefix[:i]); err != nil {
			return nil, err
		}
		start = s.pathOf(prefix[:i])
	}
	var out []registry.ObjectInfo
	err = filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscallENOTDIR) {
				return nil
			}
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		rel, _ := filepath.Rel(s.root, p)
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if p != s.root && (key == tmpDir || key == metaDir) {
				return filepath.SkipDir
			}
			return nil
		}
		if key == ".gitignore" || !d.Type().IsRegular() || !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed while listing
		}
		out = append(out, s.info(root, key, fi))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list objects %q: %w", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// URL is file://<absolute path of key>.
func (s *Store) URL(key string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(s.pathOf(key))}).String()
}

// KeyOf maps a file:// URL under the root back to its key.
func (s *Store) KeyOf(u string) (string, error) {
	if !strings.HasPrefix(u, "file://") {
		return "", &registry.InvalidError{Field: "url", Value: u, Reason: "not a file:// URL of the local object store"}
	}
	p := strings.TrimPrefix(u, "file://")
	if pu, err := url.Parse(u); err == nil && pu.Host == "" {
		p = pu.Path
	}
	rootSlash := filepath.ToSlash(s.root) + "/"
	if !strings.HasPrefix(p, rootSlash) {
		return "", &registry.InvalidError{Field: "url", Value: u, Reason: "outside the object store " + s.root}
	}
	key := strings.TrimPrefix(p, rootSlash)
	if err := registry.ValidateKey(key); err != nil {
		return "", err
	}
	return key, nil
}
