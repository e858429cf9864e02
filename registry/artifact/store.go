package artifact

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentenv/agentenv/registry"
)

// DefaultOrphanAge is Options.OrphanAge when unset.
const DefaultOrphanAge = 24 * time.Hour

// Options tunes New. A nil *Options means defaults.
type Options struct {
	// KeyPrefix is put in front of every object key (AGENT_ENV_FIXTURE_PREFIX).
	KeyPrefix string
	// TypeAliases maps legacy type names to current ones on read, on top of
	// service → environment and service_universe → environment_universe.
	TypeAliases map[string]string
	// OrphanAge is how old an upload must be before CollectOrphans may
	// remove its unpublished objects; a put gives up publishing an upload
	// older than half of it. 0 = DefaultOrphanAge.
	OrphanAge time.Duration
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
	if opt.OrphanAge <= 0 {
		opt.OrphanAge = DefaultOrphanAge
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

// uploadPrefix marks the key segment that names one put's upload.
const uploadPrefix = "put-"

// uploadTime is the layout of an upload's start time in its segment.
const uploadTime = "20060102T150405Z"

// uploadRE matches an upload segment: put-<UTC start>-<64 random bits>.
var uploadRE = regexp.MustCompile(`^put-(\d{8}T\d{6}Z)-[0-9a-f]{16}$`)

// newUpload names a new upload started at t.
func newUpload(t time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return uploadPrefix + t.UTC().Format(uploadTime) + "-" + hex.EncodeToString(b[:])
}

// uploadStart finds the upload segment of an object key and its start.
func uploadStart(key string) (time.Time, bool) {
	for _, seg := range strings.Split(key, "/") {
		if m := uploadRE.FindStringSubmatch(seg); m != nil {
			t, err := time.Parse(uploadTime, m[1])
			return t, err == nil
		}
	}
	return time.Time{}, false
}

// Key is the object key of name in upload of artifact id:
// "<prefix/>artifacts/<type>/<id-segment>/<upload>/<name>". Each put
// writes its bytes under a fresh upload, so no two writers ever share a
// key, whatever version they end up publishing.
func (s *Store) Key(typ, id, upload, name string) string {
	return s.keyRoot() + typ + "/" + registry.IDSegment(id) + "/" + upload + "/" + name
}

// keyRoot is "<prefix/>artifacts/", where every artifact object lives.
func (s *Store) keyRoot() string {
	if prefix := strings.Trim(s.opt.KeyPrefix, "/"); prefix != "" {
		return prefix + "/artifacts/"
	}
	return "artifacts/"
}

// payload is bytes to write under one object name. digest, when known
// beforehand (spooled bodies), is checked against the bytes written;
// otherwise (files streamed from their path) it is taken as they pass.
type payload struct {
	name        string
	contentType string
	open        func() (io.ReadCloser, error)
	digest      digest
}

// pathPayload streams the file at path, never holding it in memory or
// copying it first: a disk image may be larger than the temp folder.
func pathPayload(name, contentType, path string) payload {
	return payload{name: name, contentType: contentType, open: func() (io.ReadCloser, error) { return os.Open(path) }}
}

// stored is a written payload: its object URL and digest.
type stored struct {
	url string
	digest
}

// put writes payloads once under a fresh upload, then publishes them as
// the next version of id: the document built by build(version, objects by
// name), put with the expected version. The document store's (id, version)
// uniqueness is the compare-and-swap: a conflict means another writer
// published that version, so the put goes again at the next one, with the
// same objects, for as long as others keep winning. Objects of a put that
// does not publish are removed (or, after a crash, collected later by
// CollectOrphans).
func (s *Store) put(ctx context.Context, typ, id string, payloads []payload, build func(v int, objs map[string]stored) (any, error)) (registry.Document, error) {
	if err := registry.ValidateID(id); err != nil {
		return registry.Document{}, err
	}
	defer s.lock(id)()
	// A type clash fails before any byte is written.
	if _, err := s.next(ctx, typ, id); err != nil {
		return registry.Document{}, err
	}
	started := time.Now()
	upload := newUpload(started)
	objs := make(map[string]stored, len(payloads))
	var keys []string
	published := false
	defer func() {
		if !published {
			s.discard(context.WithoutCancel(ctx), keys)
		}
	}()
	for _, p := range payloads {
		key := s.Key(typ, id, upload, p.name)
		u, dg, err := s.writeObject(ctx, id, key, p)
		if u != "" {
			keys = append(keys, key)
		}
		if err != nil {
			return registry.Document{}, err
		}
		objs[p.name] = stored{url: u, digest: dg}
	}
	lost := 0 // the version last lost to another writer
	for {
		if len(keys) > 0 && time.Since(started) > s.opt.OrphanAge/2 {
			return registry.Document{}, fmt.Errorf("artifact %s: upload %s is older than half the orphan age (%s) and may be collected; not publishing it",
				id, upload, s.opt.OrphanAge)
		}
		next, err := s.next(ctx, typ, id)
		if err != nil {
			return registry.Document{}, err
		}
		if next <= lost {
			// A conflict that no published version explains: not a race.
			return registry.Document{}, fmt.Errorf("artifact %s: version %d refused with a conflict, yet no writer published it", id, next)
		}
		doc, err := build(next, objs)
		if err != nil {
			return registry.Document{}, fmt.Errorf("artifact %s: %w", id, err)
		}
		body, err := json.Marshal(doc)
		if err != nil {
			return registry.Document{}, fmt.Errorf("artifact %s: encode: %w", id, err)
		}
		d, err := s.docs.Put(ctx, registry.Artifacts, id, body, &registry.PutOptions{Version: next})
		if errors.Is(err, registry.ErrConflict) {
			lost = next // another writer published it: go again at the one after
			continue
		}
		if err != nil {
			return registry.Document{}, err
		}
		published = true
		return d, nil
	}
}

// next is the version a put of id would create now; ErrConflict when id
// holds artifacts of another type.
func (s *Store) next(ctx context.Context, typ, id string) (int, error) {
	latest, err := s.docs.Get(ctx, registry.Artifacts, registry.Ref{ID: id})
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return 1, nil
	case err != nil:
		return 0, err
	}
	if got := s.canonicalType(latest.Type); got != typ {
		return 0, fmt.Errorf("%w: artifact %s is of type %q; refusing a put of type %q",
			registry.ErrConflict, id, latest.Type, typ)
	}
	return latest.Version + 1, nil
}

// writeObject writes one payload write-once under its upload's key,
// hashing the bytes as they pass. It returns the object URL once the
// object exists (so a failed check still removes it) and the digest.
func (s *Store) writeObject(ctx context.Context, id, key string, p payload) (string, digest, error) {
	rc, err := p.open()
	if err != nil {
		return "", digest{}, fmt.Errorf("artifact %s: open %s: %w", id, p.name, err)
	}
	defer rc.Close()
	h := sha256.New()
	cr := &countWriter{w: h}
	info, err := s.objects.Put(ctx, key, io.TeeReader(rc, cr), &registry.ObjectPutOptions{ContentType: p.contentType})
	if err != nil {
		return "", digest{}, fmt.Errorf("artifact %s: %w", id, err)
	}
	got := digest{SHA256: hex.EncodeToString(h.Sum(nil)), Size: cr.n}
	if p.digest.SHA256 != "" && p.digest != got {
		return info.URL, got, fmt.Errorf("artifact %s: %s changed while it was stored (sha256 %s, %d bytes; then %s, %d bytes)",
			id, p.name, p.digest.SHA256, p.digest.Size, got.SHA256, got.Size)
	}
	return info.URL, got, nil
}

// discard removes the objects of an upload that was not published. They
// are this put's own keys, so nobody else can be about to publish them.
func (s *Store) discard(ctx context.Context, keys []string) {
	for _, k := range keys {
		_ = s.objects.Delete(ctx, k)
	}
}

// spool copies r to a temporary file once so it can be re-read, and
// hashes it on the way.
func spool(r io.Reader) (open func() (io.ReadCloser, error), d digest, cleanup func(), err error) {
	if r == nil {
		return nil, digest{}, nil, &registry.InvalidError{Field: "body", Reason: "nil reader"}
	}
	f, err := os.CreateTemp("", "agentenv-artifact-*")
	if err != nil {
		return nil, digest{}, nil, err
	}
	cleanup = func() { f.Close(); os.Remove(f.Name()) }
	h := sha256.New()
	size, err := io.Copy(io.MultiWriter(f, h), r)
	if err != nil {
		cleanup()
		return nil, digest{}, nil, fmt.Errorf("read artifact body: %w", err)
	}
	open = func() (io.ReadCloser, error) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		return io.NopCloser(f), nil
	}
	return open, digest{SHA256: hex.EncodeToString(h.Sum(nil)), Size: size}, cleanup, nil
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

// get reads ref as an artifact of type typ (a T).
func get[T any](ctx context.Context, s *Store, ref registry.Ref, typ string) (*T, error) {
	var v T
	if err := s.getAs(ctx, ref, typ, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// pinnedOrLatest is the universe a skill or cli artifact names: the
// version it pins, or the latest of id (documents of the Python framework
// pin none).
func pinnedOrLatest(id string, pinned *registry.Ref) registry.Ref {
	if pinned != nil {
		return *pinned
	}
	return registry.Ref{ID: id}
}

// openOne opens the first non-empty of urls (an object URL and its legacy
// twin) holding name of artifact ref, checked against want; ErrNotFound,
// naming what, when all are empty.
func (s *Store) openOne(ctx context.Context, ref registry.Ref, what, name string, want digest, urls ...string) (io.ReadCloser, error) {
	for _, u := range urls {
		if u != "" {
			return s.open(ctx, ref, name, u, want)
		}
	}
	return nil, &registry.NotFoundError{Kind: what, ID: ref.String(), Version: -1}
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
