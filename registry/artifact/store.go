package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sync"

	"github.com/agentenv/agentenv/registry"
)

// Options tunes New. A nil *Options means defaults.
type Options struct {
	// KeyPrefix is put in front of every object key (AGENT_ENV_FIXTURE_PREFIX).
	KeyPrefix string
	// TypeAliases maps legacy type names to current ones on read, on top of
	// service → environment and service_universe → environment_universe.
	TypeAliases map[string]string
}

// Store reads and writes artifacts.
type Store struct {
	docs    registry.DocumentStore
	objects registry.ObjectStore
	opt     Options
	aliases map[string]string
	locks   sync.Map // id → *sync.Mutex: serialises writers of one id in this process
}

// New returns an artifact store over docs and objects.
func New(docs registry.DocumentStore, objects registry.ObjectStore, o *Options) *Store {
	if docs == nil || objects == nil {
		panic("artifact.New: nil document or object store")
	}
	var opt Options
	if o != nil {
		opt = *o
	}
	aliases := make(map[string]string, len(defaultTypeAliases)+len(opt.TypeAliases))
	for k, v := range defaultTypeAliases {
		aliases[k] = v
	}
	for k, v := range opt.TypeAliases {
		aliases[k] = v
	}
	return &Store{docs: docs, objects: objects, opt: opt, aliases: aliases}
}

// Documents and Objects expose the underlying stores.
func (s *Store) Documents() registry.DocumentStore { return s.docs }
func (s *Store) Objects() registry.ObjectStore     { return s.objects }

func (s *Store) lock(id string) func() {
	m, _ := s.locks.LoadOrStore(id, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// Key is the object key of name in version v of artifact id.
func (s *Store) Key(typ, id string, v int, name string) string {
	return registry.ArtifactKey(s.opt.KeyPrefix, typ, id, v, name)
}

// payload is bytes to write under one object name; open may be called
// once per attempt.
type payload struct {
	name        string
	contentType string
	open        func() (io.ReadCloser, error)
}

// put writes payloads at the next version of id, then the document built
// by build(version, urls by name). It retries on version conflicts.
func (s *Store) put(ctx context.Context, typ, id string, payloads []payload, build func(v int, urls map[string]string) any) (registry.Document, error) {
	if err := registry.ValidateID(id); err != nil {
		return registry.Document{}, err
	}
	defer s.lock(id)()
	var lastErr error
attempts:
	for attempt := 0; attempt < 3; attempt++ {
		next := 1
		latest, err := s.docs.Get(ctx, registry.Artifacts, registry.Ref{ID: id})
		switch {
		case err == nil:
			if got := s.canonicalType(latest.Type); got != typ {
				return registry.Document{}, fmt.Errorf("%w: artifact %s is of type %q; refusing a put of type %q",
					registry.ErrConflict, id, latest.Type, typ)
			}
			next = latest.Version + 1
		case errors.Is(err, registry.ErrNotFound):
		default:
			return registry.Document{}, err
		}
		urls := make(map[string]string, len(payloads))
		for _, p := range payloads {
			u, err := s.writeObject(ctx, typ, id, next, p)
			if errors.Is(err, registry.ErrConflict) {
				// Another process wrote version next (object and document)
				// since we read the latest: go again at the one after.
				lastErr = err
				continue attempts
			}
			if err != nil {
				return registry.Document{}, err
			}
			urls[p.name] = u
		}
		body, err := json.Marshal(build(next, urls))
		if err != nil {
			return registry.Document{}, fmt.Errorf("artifact %s: encode: %w", id, err)
		}
		d, err := s.docs.Put(ctx, registry.Artifacts, id, body, &registry.PutOptions{Version: next})
		if errors.Is(err, registry.ErrConflict) {
			lastErr = err
			continue // another process took this version: go again at the next one
		}
		return d, err
	}
	return registry.Document{}, fmt.Errorf("artifact %s: gave up after 3 version conflicts: %w", id, lastErr)
}

// writeObject writes one payload write-once. An object already at that key
// with no document for the version is an orphan of a crashed or racing
// writer (bytes are written before the document); it is replaced.
func (s *Store) writeObject(ctx context.Context, typ, id string, v int, p payload) (string, error) {
	key := s.Key(typ, id, v, p.name)
	for _, overwrite := range []bool{false, true} {
		rc, err := p.open()
		if err != nil {
			return "", fmt.Errorf("artifact %s: open %s: %w", id, p.name, err)
		}
		info, err := s.objects.Put(ctx, key, rc, &registry.ObjectPutOptions{ContentType: p.contentType, Overwrite: overwrite})
		rc.Close()
		if err == nil {
			return info.URL, nil
		}
		if !errors.Is(err, registry.ErrAlreadyExists) || overwrite {
			return "", fmt.Errorf("artifact %s version %d: %w", id, v, err)
		}
		if _, derr := s.docs.Get(ctx, registry.Artifacts, registry.Ref{ID: id, Version: v}); derr == nil {
			return "", fmt.Errorf("%w: artifact %s version %d was written concurrently", registry.ErrConflict, id, v)
		}
	}
	panic("unreachable")
}

// spool copies r to a temporary file once so each attempt can re-read it,
// and hashes it on the way.
func spool(r io.Reader) (open func() (io.ReadCloser, error), size int64, sum string, cleanup func(), err error) {
	if r == nil {
		return nil, 0, "", nil, &registry.InvalidError{Field: "body", Reason: "nil reader"}
	}
	f, err := os.CreateTemp("", "agentenv-artifact-*")
	if err != nil {
		return nil, 0, "", nil, err
	}
	cleanup = func() { f.Close(); os.Remove(f.Name()) }
	h := sha256.New()
	size, err = io.Copy(io.MultiWriter(f, h), r)
	if err != nil {
		cleanup()
		return nil, 0, "", nil, fmt.Errorf("read artifact body: %w", err)
	}
	open = func() (io.ReadCloser, error) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		return io.NopCloser(f), nil
	}
	return open, size, hex.EncodeToString(h.Sum(nil)), cleanup, nil
}

func (s *Store) canonicalType(t string) string {
	if a, ok := s.aliases[t]; ok {
		return a
	}
	return t
}

// checkName refuses file names that would escape a destination folder.
func checkName(name string) error {
	if err := registry.ValidateKey(name); err != nil {
		return &registry.InvalidError{Field: "filename", Value: name, Reason: err.(*registry.InvalidError).Reason}
	}
	if path.Clean(name) != name {
		return &registry.InvalidError{Field: "filename", Value: name, Reason: "not a clean relative path"}
	}
	return nil
}

// Get reads any artifact document (type aliases applied to Type).
func (s *Store) Get(ctx context.Context, ref registry.Ref) (registry.Document, error) {
	d, err := s.docs.Get(ctx, registry.Artifacts, ref)
	if err != nil {
		return d, err
	}
	d.Type = s.canonicalType(d.Type)
	return d, nil
}

// getAs reads ref and decodes it into out, checking the type.
func (s *Store) getAs(ctx context.Context, ref registry.Ref, typ string, out any) error {
	d, err := s.Get(ctx, ref)
	if err != nil {
		return err
	}
	if d.Type != typ {
		return fmt.Errorf("%w: artifact %s is a %q, not a %q", registry.ErrInvalid, d.Ref(), d.Type, typ)
	}
	if err := d.Decode(out); err != nil {
		return fmt.Errorf("artifact %s: stored document does not decode: %w", d.Ref(), err)
	}
	return nil
}

// List returns the latest version of each artifact (optionally of one type).
func (s *Store) List(ctx context.Context, o *registry.ListOptions) ([]registry.Document, error) {
	ds, err := s.docs.List(ctx, registry.Artifacts, o)
	for i := range ds {
		ds[i].Type = s.canonicalType(ds[i].Type)
	}
	return ds, err
}
