package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"time"
)

// PageQuery asks for one page of a record collection, newest first (by
// creation time, then key), for browsing collections too large to read
// whole (the explorer's runs list at 100,000 task instances).
type PageQuery struct {
	// Where holds equality predicates on dotted paths whose values are
	// strings ("status": "failed"); all must hold.
	Where map[string]string
	// Fields, when set, are the dotted paths copied into each record's
	// Data (an absent path is left out): a page of summaries need not
	// carry every context. Nil: the whole body.
	Fields []string
	// CreatedFrom and CreatedTo bound CreatedAt (inclusive from, exclusive
	// to); zero = open.
	CreatedFrom, CreatedTo time.Time
	// After is the previous page's Next ("" = the newest page).
	After string
	// Limit is the page size, 1..1000; 0 = 50.
	Limit int
}

// Page is one page of records; Next is "" on the last page.
type Page struct {
	Records []Record
	Next    string
}

// RecordPager is an optional DocumentStore ability: PageRecords in the
// backend (an index on creation time, filters and projection in SQL).
// PageRecords (the function) uses it when present.
type RecordPager interface {
	PageRecords(ctx context.Context, c Collection, q *PageQuery) (*Page, error)
}

// pagePath is the dotted path syntax PageQuery accepts: plain JSON keys,
// so a backend can put it in a JSON path expression as is.
var pagePath = regexp.MustCompile(`^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$`)

// MaxPageLimit bounds PageQuery.Limit.
const MaxPageLimit = 1000

// Check validates q and returns a copy with defaults applied.
func (q *PageQuery) Check() (PageQuery, error) {
	var out PageQuery
	if q != nil {
		out = *q
	}
	if out.Limit == 0 {
		out.Limit = 50
	}
	if out.Limit < 0 || out.Limit > MaxPageLimit {
		return out, invalid("limit", "", "must be 1..1000")
	}
	for p := range out.Where {
		if !pagePath.MatchString(p) {
			return out, invalid("filter path", p, "want a dotted path of plain keys such as context.metadata.eval_id")
		}
	}
	for _, p := range out.Fields {
		if !pagePath.MatchString(p) {
			return out, invalid("field", p, "want a dotted path of plain keys such as context.metadata")
		}
	}
	if out.After != "" {
		if _, _, err := DecodePageCursor(out.After); err != nil {
			return out, err
		}
	}
	return out, nil
}

// PageCursor encodes the position after (createdAt, key): what a pager
// returns as Next. It is opaque to callers.
func PageCursor(createdAt time.Time, key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(createdAt.UTC().Format(time.RFC3339Nano) + "|" + key))
}

// DecodePageCursor reverses PageCursor; anything else is an ErrInvalid
// error.
func DecodePageCursor(s string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		ts, key, ok := strings.Cut(string(b), "|")
		if t, terr := time.Parse(time.RFC3339Nano, ts); ok && terr == nil && key != "" {
			return t.UTC(), key, nil
		}
	}
	return time.Time{}, "", invalid("cursor", s, "not a cursor this store returned")
}

// PageRecords returns one page of c: in the backend when ds is a
// RecordPager, otherwise by reading every record (fine for the memory
// store and small collections).
func PageRecords(ctx context.Context, ds DocumentStore, c Collection, q *PageQuery) (*Page, error) {
	if err := c.CheckRecords(); err != nil {
		return nil, err
	}
	if p, ok := ds.(RecordPager); ok {
		return p.PageRecords(ctx, c, q)
	}
	pq, err := q.Check()
	if err != nil {
		return nil, err
	}
	rq := &RecordQuery{}
	if len(pq.Where) > 0 {
		rq.Where = map[string]any{}
		for k, v := range pq.Where {
			rq.Where[k] = v
		}
	}
	recs, err := ds.QueryRecords(ctx, c, rq)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(recs, func(i, j int) bool { return newerRecord(recs[i], recs[j]) })
	var afterT time.Time
	var afterK string
	if pq.After != "" {
		afterT, afterK, _ = DecodePageCursor(pq.After)
	}
	page := &Page{}
	for _, r := range recs {
		if (!pq.CreatedFrom.IsZero() && r.CreatedAt.Before(pq.CreatedFrom)) || (!pq.CreatedTo.IsZero() && !r.CreatedAt.Before(pq.CreatedTo)) {
			continue
		}
		if pq.After != "" && !newerRecord(Record{CreatedAt: afterT, Key: afterK}, r) {
			continue
		}
		if len(page.Records) == pq.Limit {
			last := page.Records[len(page.Records)-1]
			page.Next = PageCursor(last.CreatedAt, last.Key)
			break
		}
		if pq.Fields != nil {
			data, err := ProjectFields(r.Data, pq.Fields)
			if err != nil {
				return nil, err
			}
			r.Data = data
		}
		page.Records = append(page.Records, r)
	}
	return page, nil
}

// newerRecord orders records newest first: creation time, then key, both
// descending.
func newerRecord(a, b Record) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.Key > b.Key
}

// ProjectFields keeps only the given dotted paths of a JSON object body.
func ProjectFields(body json.RawMessage, fields []string) (json.RawMessage, error) {
	doc, err := DecodeObject(body)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, f := range fields {
		if v, ok := Lookup(doc, f); ok {
			SetPath(out, f, v)
		}
	}
	return json.Marshal(out)
}

// SetPath writes v at a dotted path of m, creating the objects on the way
// (a non-object on the way is replaced).
func SetPath(m map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}
