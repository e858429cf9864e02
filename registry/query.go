package registry

import (
	"context"
	"errors"
	"sort"
)

// Query is the reference's query builder over a versioned collection,
// built on the DocumentStore interface so it works with
// every backend:
//
//	docs, err := registry.NewQuery(store, registry.Artifacts).ID("items").VersionGte(2).Sort("version", true).Limit(3).Execute(ctx)
//	d, err := registry.NewQuery(store, registry.Tasks).Type("task").Latest().First(ctx)
//
// Without ID it reads every id (one call per id unless Latest is set);
// fine for the local store's sizes, not meant for large remote ones.
type Query struct {
	s          DocumentStore
	c          Collection
	id         string
	vGte, vLte int
	typ        string
	sortField  string
	desc       bool
	limit      int
	offset     int
	latest     bool
}

// NewQuery starts a query on collection c.
func NewQuery(s DocumentStore, c Collection) *Query { return &Query{s: s, c: c} }

func (q *Query) ID(id string) *Query                 { q.id = id; return q }
func (q *Query) Version(v int) *Query                { q.vGte, q.vLte = v, v; return q }
func (q *Query) VersionGte(v int) *Query             { q.vGte = v; return q }
func (q *Query) VersionLte(v int) *Query             { q.vLte = v; return q }
func (q *Query) Type(t string) *Query                { q.typ = t; return q }
func (q *Query) Limit(n int) *Query                  { q.limit = n; return q }
func (q *Query) Offset(n int) *Query                 { q.offset = n; return q }
func (q *Query) Latest() *Query                      { q.latest = true; return q }
func (q *Query) Sort(field string, desc bool) *Query { q.sortField, q.desc = field, desc; return q }

// Execute runs the query. Default order: id ascending, then version
// descending. Sort fields: "id", "version", "created_at_utc" or any dotted
// path of the body (absent values last).
func (q *Query) Execute(ctx context.Context) ([]Document, error) {
	if q.limit < 0 || q.offset < 0 || q.vGte < 0 || q.vLte < 0 {
		return nil, invalid("query", "", "negative limit, offset or version bound")
	}
	var docs []Document
	if q.id != "" {
		vs, err := q.s.Versions(ctx, q.c, q.id)
		if errors.Is(err, ErrNotFound) {
			return []Document{}, nil
		}
		if err != nil {
			return nil, err
		}
		if q.latest {
			vs = vs[len(vs)-1:]
		}
		docs = vs
	} else {
		latest, err := q.s.List(ctx, q.c, &ListOptions{Type: q.typ})
		if err != nil {
			return nil, err
		}
		if q.latest {
			docs = latest
		} else {
			for _, d := range latest {
				vs, err := q.s.Versions(ctx, q.c, d.ID)
				if err != nil {
					return nil, err
				}
				docs = append(docs, vs...)
			}
		}
	}
	kept := docs[:0:0]
	for _, d := range docs {
		if (q.vGte > 0 && d.Version < q.vGte) || (q.vLte > 0 && d.Version > q.vLte) || (q.typ != "" && d.Type != q.typ) {
			continue
		}
		kept = append(kept, d)
	}
	q.order(kept)
	if q.offset >= len(kept) {
		return []Document{}, nil
	}
	kept = kept[q.offset:]
	if q.limit > 0 && q.limit < len(kept) {
		kept = kept[:q.limit]
	}
	return kept, nil
}

func (q *Query) order(docs []Document) {
	if q.sortField == "" {
		sort.SliceStable(docs, func(i, j int) bool {
			if docs[i].ID != docs[j].ID {
				return docs[i].ID < docs[j].ID
			}
			return docs[i].Version > docs[j].Version
		})
		return
	}
	key := func(d Document) (any, bool) {
		switch q.sortField {
		case "id":
			return d.ID, true
		case "version":
			return d.Version, true
		case "created_at_utc":
			return FormatISO(d.CreatedAt), true
		}
		m, err := DecodeObject(d.Data)
		if err != nil {
			return nil, false
		}
		v, ok := Lookup(m, q.sortField)
		return v, ok && v != nil
	}
	sort.SliceStable(docs, func(i, j int) bool {
		a, aok := key(docs[i])
		b, bok := key(docs[j])
		if !aok || !bok {
			return aok && !bok
		}
		c, ok := CompareJSON(a, b)
		if !ok {
			return false
		}
		if q.desc {
			return c > 0
		}
		return c < 0
	})
}

// First returns the first result; *NotFoundError when there is none.
func (q *Query) First(ctx context.Context) (Document, error) {
	q.limit = 1
	docs, err := q.Execute(ctx)
	if err != nil {
		return Document{}, err
	}
	if len(docs) == 0 {
		id := q.id
		if id == "" {
			id = "(query)"
		}
		return Document{}, &NotFoundError{Kind: q.c.Kind(), ID: id, Version: q.vGte}
	}
	return docs[0], nil
}

// Count returns the number of results (ignoring Limit and Offset).
func (q *Query) Count(ctx context.Context) (int, error) {
	cp := *q
	cp.limit, cp.offset = 0, 0
	docs, err := cp.Execute(ctx)
	return len(docs), err
}
