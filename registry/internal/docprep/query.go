package docprep

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentenv/agentenv/registry"
)

// RecordQuery normalises q (nil means every record) and returns its
// filters, validated: Where's equalities first, in key order so a query
// behaves the same on every call, then q.Filters.
func RecordQuery(q *registry.RecordQuery) (registry.RecordQuery, []registry.Filter, error) {
	var opt registry.RecordQuery
	if q != nil {
		opt = *q
	}
	if opt.Limit < 0 || opt.Offset < 0 {
		return opt, nil, &registry.InvalidError{Field: "limit/offset", Reason: "must be >= 0"}
	}
	paths := make([]string, 0, len(opt.Where))
	for p := range opt.Where {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	filters := make([]registry.Filter, 0, len(paths)+len(opt.Filters))
	for _, p := range paths {
		filters = append(filters, registry.Filter{Path: p, Op: registry.OpEq, Value: opt.Where[p]})
	}
	filters = append(filters, opt.Filters...)
	for _, f := range filters {
		if err := f.Validate(); err != nil {
			return opt, nil, err
		}
	}
	return opt, filters, nil
}

// ListOptions normalises o (nil means the first page of everything) and
// checks its paging.
func ListOptions(o *registry.ListOptions) (registry.ListOptions, error) {
	var opt registry.ListOptions
	if o != nil {
		opt = *o
	}
	if opt.Limit < 0 || opt.Offset < 0 {
		return opt, &registry.InvalidError{Field: "limit/offset", Reason: "must be >= 0"}
	}
	return opt, nil
}

// SelectRecords applies filters, then opt's order and paging, to recs,
// which arrive in insertion order (the order without OrderBy). A record
// whose body does not decode never matches a filter or an order.
func SelectRecords(recs []registry.Record, filters []registry.Filter, opt registry.RecordQuery) []registry.Record {
	type item struct {
		r   registry.Record
		doc map[string]any
	}
	needDoc := len(filters) > 0 || opt.OrderBy != ""
	items := make([]item, 0, len(recs))
	for _, r := range recs {
		var doc map[string]any
		if needDoc {
			d, err := registry.DecodeObject(r.Data)
			if err != nil {
				continue
			}
			doc = d
		}
		if matchAll(filters, doc) {
			items = append(items, item{r, doc})
		}
	}
	if opt.OrderBy != "" {
		sort.SliceStable(items, func(i, j int) bool {
			a, aok := present(items[i].doc, opt.OrderBy)
			b, bok := present(items[j].doc, opt.OrderBy)
			if !aok || !bok {
				return aok && !bok // absent values last, whatever the direction
			}
			c := compare(a, b)
			if opt.Desc {
				return c > 0
			}
			return c < 0
		})
	} else if opt.Desc {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	if opt.Offset >= len(items) {
		return []registry.Record{}
	}
	items = items[opt.Offset:]
	if opt.Limit > 0 && opt.Limit < len(items) {
		items = items[:opt.Limit]
	}
	out := make([]registry.Record, len(items))
	for i, it := range items {
		out[i] = it.r
	}
	return out
}

func matchAll(filters []registry.Filter, doc map[string]any) bool {
	for _, f := range filters {
		if !f.Match(doc) {
			return false
		}
	}
	return true
}

func present(doc map[string]any, path string) (any, bool) {
	v, ok := registry.Lookup(doc, path)
	return v, ok && v != nil
}

// compare orders numbers numerically, strings lexically, and mixed kinds
// by their text.
func compare(a, b any) int {
	if c, ok := registry.CompareJSON(a, b); ok {
		return c
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}
