package gormdoc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/internal/docprep"
)

type recRow struct {
	Rkey      string
	Rev       int64
	CreatedAt string
	UpdatedAt string
	Doc       string
}

func (r recRow) record(c registry.Collection) registry.Record {
	ct, _ := time.Parse(timeCol, r.CreatedAt)
	ut, _ := time.Parse(timeCol, r.UpdatedAt)
	return registry.Record{Collection: c, Key: r.Rkey, Rev: r.Rev, CreatedAt: ct, UpdatedAt: ut, Data: json.RawMessage(r.Doc)}
}

// InsertRecord creates a record; ErrAlreadyExists if the key is taken.
func (s *Store) InsertRecord(ctx context.Context, c registry.Collection, key string, body json.RawMessage) (registry.Record, error) {
	data, err := docprep.Record(c, key, body)
	if err != nil {
		return registry.Record{}, err
	}
	now := s.now()
	ts := now.Format(timeCol)
	err = s.db.WithContext(ctx).Exec(`INSERT INTO `+table(c)+` (rkey, rev, created_at, updated_at, doc) VALUES (?, 1, ?, ?, ?)`,
		key, ts, ts, string(data)).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return registry.Record{}, fmt.Errorf("%s %s: %w", c.Kind(), key, registry.ErrAlreadyExists)
	}
	if err != nil {
		return registry.Record{}, s.wrap("insert "+string(c)+" "+key, err)
	}
	return registry.Record{Collection: c, Key: key, Rev: 1, CreatedAt: now, UpdatedAt: now, Data: data}, nil
}

// UpsertRecord replaces the body of key (or creates it), bumping Rev.
func (s *Store) UpsertRecord(ctx context.Context, c registry.Collection, key string, body json.RawMessage) (registry.Record, error) {
	data, err := docprep.Record(c, key, body)
	if err != nil {
		return registry.Record{}, err
	}
	for attempt := 0; attempt < 10; attempt++ {
		now := s.now()
		ts := now.Format(timeCol)
		res := s.db.WithContext(ctx).Exec(`UPDATE `+table(c)+` SET doc = ?, rev = rev + 1, updated_at = ? WHERE rkey = ?`,
			string(data), ts, key)
		if res.Error != nil {
			return registry.Record{}, s.wrap("upsert "+string(c)+" "+key, res.Error)
		}
		if res.RowsAffected == 1 {
			return s.GetRecord(ctx, c, key)
		}
		r, err := s.InsertRecord(ctx, c, key, data)
		if errors.Is(err, registry.ErrAlreadyExists) {
			continue // a concurrent writer created it: update that one
		}
		return r, err
	}
	return registry.Record{}, fmt.Errorf("%w: %s %s: too many concurrent writers", registry.ErrConflict, c.Kind(), key)
}

// GetRecord reads one record.
func (s *Store) GetRecord(ctx context.Context, c registry.Collection, key string) (registry.Record, error) {
	if err := c.CheckRecords(); err != nil {
		return registry.Record{}, err
	}
	if err := docprep.RecordKey(key); err != nil {
		return registry.Record{}, err
	}
	var rows []recRow
	if err := s.db.WithContext(ctx).Raw(`SELECT rkey, rev, created_at, updated_at, doc FROM `+table(c)+` WHERE rkey = ?`, key).
		Scan(&rows).Error; err != nil {
		return registry.Record{}, s.wrap("get "+string(c)+" "+key, err)
	}
	if len(rows) == 0 {
		return registry.Record{}, &registry.NotFoundError{Kind: c.Kind(), ID: key, Version: -1}
	}
	return rows[0].record(c), nil
}

// UpdateRecord applies m under compare-and-swap on rev, retrying on races
// until ctx ends.
func (s *Store) UpdateRecord(ctx context.Context, c registry.Collection, key string, m registry.Mutator) (registry.Record, error) {
	for backoff := time.Millisecond; ; {
		cur, err := s.GetRecord(ctx, c, key)
		if err != nil {
			return registry.Record{}, err
		}
		doc, err := registry.DecodeObject(cur.Data)
		if err != nil {
			return registry.Record{}, fmt.Errorf("%s %s: stored document is corrupt: %w", c.Kind(), key, err)
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
		now := s.now()
		res := s.db.WithContext(ctx).Exec(`UPDATE `+table(c)+` SET doc = ?, rev = rev + 1, updated_at = ? WHERE rkey = ? AND rev = ?`,
			string(data), now.Format(timeCol), key, cur.Rev)
		if res.Error != nil {
			return registry.Record{}, s.wrap("update "+string(c)+" "+key, res.Error)
		}
		if res.RowsAffected == 1 {
			return registry.Record{Collection: c, Key: key, Rev: cur.Rev + 1, CreatedAt: cur.CreatedAt, UpdatedAt: now, Data: data}, nil
		}
		// Lost the race: back off a little (bounded) and re-read.
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return registry.Record{}, ctx.Err()
		case <-t.C:
		}
		if backoff < 50*time.Millisecond {
			backoff *= 2
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
	res := s.db.WithContext(ctx).Exec(`DELETE FROM `+table(c)+` WHERE rkey = ?`, key)
	if res.Error != nil {
		return s.wrap("delete "+string(c)+" "+key, res.Error)
	}
	if res.RowsAffected == 0 {
		return &registry.NotFoundError{Kind: c.Kind(), ID: key, Version: -1}
	}
	return nil
}

// QueryRecords selects the key range in SQL, then filters and orders in
// Go (docprep.SelectRecords) exactly as the memory store does.
func (s *Store) QueryRecords(ctx context.Context, c registry.Collection, q *registry.RecordQuery) ([]registry.Record, error) {
	if err := c.CheckRecords(); err != nil {
		return nil, err
	}
	opt, filters, err := docprep.RecordQuery(q)
	if err != nil {
		return nil, err
	}
	sql := `SELECT rkey, rev, created_at, updated_at, doc FROM ` + table(c)
	var args []any
	if opt.KeyStart != "" {
		sql += ` WHERE rkey >= ?`
		args = append(args, opt.KeyStart)
		if hi, ok := prefixUpper(opt.KeyStart); ok {
			sql += ` AND rkey < ?`
			args = append(args, hi)
		}
	}
	sql += ` ORDER BY created_at, rkey`
	var rows []recRow
	if err := s.db.WithContext(ctx).Raw(sql, args...).Scan(&rows).Error; err != nil {
		return nil, s.wrap("query "+string(c), err)
	}
	recs := make([]registry.Record, len(rows))
	for i, row := range rows {
		recs[i] = row.record(c)
	}
	return docprep.SelectRecords(recs, filters, opt), nil
}
