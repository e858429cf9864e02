// Package memory is an in-process DocumentStore for tests and dry runs:
// the same contract as the SQL backends (it passes the same conformance
// suite), nothing on disk, lost at Close.
//
//	docs := memory.New()
package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/internal/docprep"
)

// Store is the in-memory DocumentStore. It is safe for concurrent use.
type Store struct {
	mu       sync.RWMutex
	versions map[registry.Collection]map[string][]registry.Document
	records  map[registry.Collection]map[string]*registry.Record
	seq      int64 // creation order of records
	order    map[*registry.Record]int64
	closed   bool
}

var (
	_ registry.DocumentStore   = (*Store)(nil)
	_ registry.MetadataUpdater = (*Store)(nil)
)

// New returns an empty store.
func New() *Store {
	return &Store{
		versions: map[registry.Collection]map[string][]registry.Document{},
		records:  map[registry.Collection]map[string]*registry.Record{},
		order:    map[*registry.Record]int64{},
	}
}

var errClosed = fmt.Errorf("memory store: %w: closed", registry.ErrUnavailable)

func now() time.Time { return time.Now().UTC() }

func clone(b []byte) json.RawMessage { return append(json.RawMessage(nil), b...) }

func cloneDoc(d registry.Document) registry.Document { d.Data = clone(d.Data); return d }

func cloneRec(r registry.Record) registry.Record { r.Data = clone(r.Data); return r }

// Put inserts the next version of id.
func (s *Store) Put(ctx context.Context, c registry.Collection, id string, body json.RawMessage, o *registry.PutOptions) (registry.Document, error) {
	if err := c.CheckVersioned(); err != nil {
		return registry.Document{}, err
	}
	if err := registry.ValidateID(id); err != nil {
		return registry.Document{}, err
	}
	m, typ, err := docprep.Document(body)
	if err != nil {
		return registry.Document{}, err
	}
	if o != nil && o.Version < 0 {
		return registry.Document{}, &registry.InvalidError{Field: "version", Value: fmt.Sprint(o.Version), Reason: "must be >= 0"}
	}
	if err := ctx.Err(); err != nil {
		return registry.Document{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return registry.Document{}, errClosed
	}
	byID := s.versions[c]
	if byID == nil {
		byID = map[string][]registry.Document{}
		s.versions[c] = byID
	}
	vs := byID[id]
	next := len(vs) + 1
	if len(vs) > 0 && vs[len(vs)-1].Type != typ {
		return registry.Document{}, fmt.Errorf("%w: %s %s is of type %q; refusing a put of type %q", registry.ErrConflict, c.Kind(), id, vs[len(vs)-1].Type, typ)
	}
	if o != nil && o.Version > 0 && o.Version != next {
		return registry.Document{}, fmt.Errorf("%w: %s %s: expected to create version %d but the next version is %d", registry.ErrConflict, c.Kind(), id, o.Version, next)
	}
	t := now()
	m["id"], m["version"], m["created_at_utc"] = id, next, registry.FormatISO(t)
	data, err := json.Marshal(m)
	if err != nil {
		return registry.Document{}, &registry.InvalidError{Field: "document", Reason: err.Error()}
	}
	d := registry.Document{Collection: c, ID: id, Version: next, Type: typ, CreatedAt: t, Data: data}
	byID[id] = append(vs, d)
	return cloneDoc(d), nil
}

// Get reads one version (0 = latest).
func (s *Store) Get(ctx context.Context, c registry.Collection, ref registry.Ref) (registry.Document, error) {
	if err := c.CheckVersioned(); err != nil {
		return registry.Document{}, err
	}
	if err := registry.ValidateID(ref.ID); err != nil {
		return registry.Document{}, err
	}
	if ref.Version < 0 {
		return registry.Document{}, &registry.InvalidError{Field: "version", Value: fmt.Sprint(ref.Version), Reason: "must be >= 1 (or 0 for latest)"}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return registry.Document{}, errClosed
	}
	vs := s.versions[c][ref.ID]
	switch {
	case len(vs) == 0, ref.Version > len(vs):
		return registry.Document{}, &registry.NotFoundError{Kind: c.Kind(), ID: ref.ID, Version: ref.Version}
	case ref.Version == 0:
		return cloneDoc(vs[len(vs)-1]), nil
	}
	return cloneDoc(vs[ref.Version-1]), nil
}

// Versions lists every version of id, oldest first.
func (s *Store) Versions(ctx context.Context, c registry.Collection, id string) ([]registry.Document, error) {
	if err := c.CheckVersioned(); err != nil {
		return nil, err
	}
	if err := registry.ValidateID(id); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	vs := s.versions[c][id]
	if len(vs) == 0 {
		return nil, &registry.NotFoundError{Kind: c.Kind(), ID: id}
	}
	out := make([]registry.Document, len(vs))
	for i, d := range vs {
		out[i] = cloneDoc(d)
	}
	return out, nil
}

// List returns the latest version of each id, by id.
func (s *Store) List(ctx context.Context, c registry.Collection, o *registry.ListOptions) ([]registry.Document, error) {
	if err := c.CheckVersioned(); err != nil {
		return nil, err
	}
	opt, err := docprep.ListOptions(o)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	var out []registry.Document
	for id, vs := range s.versions[c] {
		last := vs[len(vs)-1]
		if strings.HasPrefix(id, opt.IDPrefix) && (opt.Type == "" || last.Type == opt.Type) {
			out = append(out, cloneDoc(last))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	if opt.Offset >= len(out) {
		return []registry.Document{}, nil
	}
	out = out[opt.Offset:]
	if opt.Limit > 0 && opt.Limit < len(out) {
		out = out[:opt.Limit]
	}
	return out, nil
}

// UpdateMetadata is the timestamp compare-and-swap on a version's metadata.
func (s *Store) UpdateMetadata(ctx context.Context, c registry.Collection, ref registry.Ref, expect string, patch map[string]any) (registry.Document, error) {
	if err := docprep.CheckMetadataUpdate(c, ref, patch); err != nil {
		return registry.Document{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return registry.Document{}, errClosed
	}
	vs := s.versions[c][ref.ID]
	if ref.Version > len(vs) {
		return registry.Document{}, &registry.NotFoundError{Kind: c.Kind(), ID: ref.ID, Version: ref.Version}
	}
	d := vs[ref.Version-1]
	data, err := docprep.PatchMetadata(c, ref, d.Data, expect, patch, now())
	if err != nil {
		return registry.Document{}, err
	}
	d.Data = data
	vs[ref.Version-1] = d
	return cloneDoc(d), nil
}

// Ping reports whether the store is open.
func (s *Store) Ping(ctx context.Context) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed
	}
	return nil
}

// Close drops everything.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.versions, s.records, s.order = nil, nil, nil
	return nil
}
