package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/internal/docprep"
)

// InsertRecord creates a record; ErrAlreadyExists if the key is taken.
func (s *Store) InsertRecord(ctx context.Context, c registry.Collection, key string, body json.RawMessage) (registry.Record, error) {
	data, err := docprep.Record(c, key, body)
	if err != nil {
		return registry.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return registry.Record{}, errClosed
	}
	if _, ok := s.records[c][key]; ok {
		return registry.Record{}, fmt.Errorf("%s %s: %w", c.Kind(), key, registry.ErrAlreadyExists)
	}
	return s.insertLocked(c, key, data), nil
}

func (s *Store) insertLocked(c registry.Collection, key string, data []byte) registry.Record {
	if s.records[c] == nil {
		s.records[c] = map[string]*registry.Record{}
	}
	t := now()
	r := &registry.Record{Collection: c, Key: key, Rev: 1, CreatedAt: t, UpdatedAt: t, Data: data}
	s.records[c][key] = r
	s.seq++
	s.order[r] = s.seq
	return cloneRec(*r)
}

// UpsertRecord replaces the body of key (or creates it), bumping Rev.
func (s *Store) UpsertRecord(ctx context.Context, c registry.Collection, key string, body json.RawMessage) (registry.Record, error) {
	data, err := docprep.Record(c, key, body)
	if err != nil {
		return registry.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return registry.Record{}, errClosed
	}
	r, ok := s.records[c][key]
	if !ok {
		return s.insertLocked(c, key, data), nil
	}
	r.Data, r.Rev, r.UpdatedAt = data, r.Rev+1, now()
	return cloneRec(*r), nil
}

// GetRecord reads one record.
func (s *Store) GetRecord(ctx context.Context, c registry.Collection, key string) (registry.Record, error) {
	if err := c.CheckRecords(); err != nil {
		return registry.Record{}, err
	}
	if err := docprep.RecordKey(key); err != nil {
		return registry.Record{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return registry.Record{}, errClosed
	}
	r, ok := s.records[c][key]
	if !ok {
		return registry.Record{}, &registry.NotFoundError{Kind: c.Kind(), ID: key, Version: -1}
	}
	return cloneRec(*r), nil
}

// UpdateRecord applies m under the store lock (the compare-and-swap is
// trivially won).
func (s *Store) UpdateRecord(ctx context.Context, c registry.Collection, key string, m registry.Mutator) (registry.Record, error) {
	cur, err := s.GetRecord(ctx, c, key)
	if err != nil {
		return registry.Record{}, err
	}
	for {
		doc, err := registry.DecodeObject(cur.Data)
		if err != nil {
			return registry.Record{}, err
		}
		if err := m(doc); err != nil {
			if errors.Is(err, registry.ErrNoChange) {
				return cur, nil
			}
			return registry.Record{}, fmt.Errorf("update %s %s: %w", c.Kind(), key, err)
		}
		data, err := docprep.EncodeRecord(c, key, doc)
		if err != nil {
			return registry.Record{}, err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return registry.Record{}, errClosed
		}
		r, ok := s.records[c][key]
		if !ok {
			s.mu.Unlock()
			return registry.Record{}, &registry.NotFoundError{Kind: c.Kind(), ID: key, Version: -1}
		}
		if r.Rev == cur.Rev {
			r.Data, r.Rev, r.UpdatedAt = data, r.Rev+1, now()
			out := cloneRec(*r)
			s.mu.Unlock()
			return out, nil
		}
		cur = cloneRec(*r) // lost the race: mutate the newer state
		s.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return registry.Record{}, err
		}
	}
}

// DeleteRecord removes a record.
func (s *Store) DeleteRecord(ctx context.Context, c registry.Collection, key string) error {
	if err := c.CheckRecords(); err != nil {
		return err
	}
	if err := docprep.RecordKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	r, ok := s.records[c][key]
	if !ok {
		return &registry.NotFoundError{Kind: c.Kind(), ID: key, Version: -1}
	}
	delete(s.records[c], key)
	delete(s.order, r)
	return nil
}

// QueryRecords filters and orders records.
func (s *Store) QueryRecords(ctx context.Context, c registry.Collection, q *registry.RecordQuery) ([]registry.Record, error) {
	if err := c.CheckRecords(); err != nil {
		return nil, err
	}
	opt, filters, err := docprep.RecordQuery(q)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	type item struct {
		r   registry.Record
		seq int64
	}
	var items []item
	for key, r := range s.records[c] {
		if !strings.HasPrefix(key, opt.KeyStart) {
			continue
		}
		items = append(items, item{r: cloneRec(*r), seq: s.order[r]})
	}
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return nil, errClosed
	}
	sort.Slice(items, func(i, j int) bool { return items[i].seq < items[j].seq })
	recs := make([]registry.Record, len(items))
	for i, it := range items {
		recs[i] = it.r
	}
	return docprep.SelectRecords(recs, filters, opt), nil
}
