package gormdoc

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentenv/agentenv/registry"
)

var _ registry.RecordPager = (*Store)(nil)

// PageRecords reads one page newest first through the created_at index:
// the keyset (created_at, rkey) replaces OFFSET, equality filters and the
// projection are JSON path expressions in SQL, so a page of summaries never
// decodes the whole collection.
func (s *Store) PageRecords(ctx context.Context, c registry.Collection, q *registry.PageQuery) (*registry.Page, error) {
	if err := c.CheckRecords(); err != nil {
		return nil, err
	}
	pq, err := q.Check()
	if err != nil {
		return nil, err
	}
	cols := `rkey, rev, created_at, updated_at, `
	var args []any
	if pq.Fields == nil {
		cols += `doc`
	} else {
		// One JSON array of the projected values, in Fields order (null
		// when absent): one column whatever the number of fields.
		parts := make([]string, len(pq.Fields))
		for i, f := range pq.Fields {
			parts[i] = s.jsonAt(f)
		}
		if s.d.Name == "postgres" {
			cols += `json_build_array(` + strings.Join(parts, ", ") + `)::text AS doc`
		} else {
			cols += `json_array(` + strings.Join(parts, ", ") + `) AS doc`
		}
	}
	sql := `SELECT ` + cols + ` FROM ` + table(c) + ` WHERE 1=1`
	for path, v := range pq.Where {
		sql += ` AND ` + s.textAt(path) + ` = ?`
		args = append(args, v)
	}
	if !pq.CreatedFrom.IsZero() {
		sql += ` AND created_at >= ?`
		args = append(args, pq.CreatedFrom.UTC().Format(timeCol))
	}
	if !pq.CreatedTo.IsZero() {
		sql += ` AND created_at < ?`
		args = append(args, pq.CreatedTo.UTC().Format(timeCol))
	}
	if pq.After != "" {
		t, key, _ := registry.DecodePageCursor(pq.After)
		at := t.Format(timeCol)
		// The created_at <= ? conjunct lets the index bound the scan: each
		// page starts where the last ended, never from the newest row.
		sql += ` AND created_at <= ? AND (created_at < ? OR rkey < ?)`
		args = append(args, at, at, key)
	}
	sql += ` ORDER BY created_at DESC, rkey DESC LIMIT ?`
	args = append(args, pq.Limit+1)
	var rows []recRow
	if err := s.db.WithContext(ctx).Raw(sql, args...).Scan(&rows).Error; err != nil {
		return nil, s.wrap("page "+string(c), err)
	}
	page := &registry.Page{Records: make([]registry.Record, 0, min(len(rows), pq.Limit))}
	for i, row := range rows {
		if i == pq.Limit {
			last := page.Records[i-1]
			page.Next = registry.PageCursor(last.CreatedAt, last.Key)
			break
		}
		rec := row.record(c)
		if pq.Fields != nil {
			data, err := projected(pq.Fields, row.Doc)
			if err != nil {
				return nil, s.wrap("page "+string(c), err)
			}
			rec.Data = data
		}
		page.Records = append(page.Records, rec)
	}
	return page, nil
}

// projected turns the JSON array of projected values back into an object
// holding each present field at its path.
func projected(fields []string, arr string) (json.RawMessage, error) {
	var vals []json.RawMessage
	if err := json.Unmarshal([]byte(arr), &vals); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for i, f := range fields {
		if i < len(vals) && string(vals[i]) != "null" {
			registry.SetPath(out, f, vals[i])
		}
	}
	return json.Marshal(out)
}

// jsonAt is the SQL expression of the JSON value at a dotted path (paths
// are checked by PageQuery.Check: plain keys only).
func (s *Store) jsonAt(path string) string {
	if s.d.Name == "postgres" {
		return `(doc::jsonb #> '{` + strings.ReplaceAll(path, ".", ",") + `}')`
	}
	return `(doc -> '$.` + path + `')`
}

// textAt is the SQL expression of the string at a dotted path.
func (s *Store) textAt(path string) string {
	if s.d.Name == "postgres" {
		return `(doc::jsonb #>> '{` + strings.ReplaceAll(path, ".", ",") + `}')`
	}
	return `(doc ->> '$.` + path + `')`
}
