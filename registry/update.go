package registry

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Update is the reference's UpdateSpec as a Mutator
// builder: Set, Unset, Inc, AddToSet (set-union of list items, additions
// only) and Push. Paths are dotted; missing parents are created. The same
// path under two operators, or a path and its ancestor, is invalid.
//
//	rec, err := docs.UpdateRecord(ctx, registry.TaskInstances, id, registry.Update{
//		Set:      map[string]any{"status": "completed"},
//		AddToSet: map[string][]any{"completed_steps": {map[string]any{"step_id": "a", "status": "success"}}},
//	}.Mutator())
type Update struct {
	Set      map[string]any
	Unset    []string
	Inc      map[string]float64
	AddToSet map[string][]any
	Push     map[string][]any
}

// Validate checks the path rules.
func (u Update) Validate() error {
	var paths []string
	add := func(p string) { paths = append(paths, p) }
	for p := range u.Set {
		add(p)
	}
	for _, p := range u.Unset {
		add(p)
	}
	for p := range u.Inc {
		add(p)
	}
	for p := range u.AddToSet {
		add(p)
	}
	for p := range u.Push {
		add(p)
	}
	sort.Strings(paths)
	for i, p := range paths {
		if p == "" || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..") {
			return invalid("update path", p, "want a dotted path")
		}
		if i > 0 {
			prev := paths[i-1]
			if prev == p {
				return invalid("update path", p, "used by two operators")
			}
			if strings.HasPrefix(p, prev+".") {
				return invalid("update path", p, "conflicts with its ancestor "+prev)
			}
		}
	}
	return nil
}

// Empty reports whether u changes nothing.
func (u Update) Empty() bool {
	return len(u.Set)+len(u.Unset)+len(u.Inc)+len(u.AddToSet)+len(u.Push) == 0
}

// Apply changes doc in place.
func (u Update) Apply(doc map[string]any) error {
	if err := u.Validate(); err != nil {
		return err
	}
	for _, p := range sortedKeys(u.Set) {
		parent, leaf, err := parentOf(doc, p, true)
		if err != nil {
			return err
		}
		parent[leaf] = normalize(u.Set[p])
	}
	for _, p := range u.Unset {
		parent, leaf, err := parentOf(doc, p, false)
		if err == nil && parent != nil {
			delete(parent, leaf)
		}
	}
	for _, p := range sortedKeys(u.Inc) {
		parent, leaf, err := parentOf(doc, p, true)
		if err != nil {
			return err
		}
		cur := 0.0
		if v, ok := parent[leaf]; ok && v != nil {
			f, ok := toFloat(v)
			if !ok {
				return invalid("update inc", p, "current value is not a number")
			}
			cur = f
		}
		n := cur + u.Inc[p]
		if n == float64(int64(n)) {
			parent[leaf] = json.Number(fmt.Sprint(int64(n)))
		} else {
			parent[leaf] = json.Number(fmt.Sprint(n))
		}
	}
	for _, group := range []struct {
		m    map[string][]any
		uniq bool
	}{{u.AddToSet, true}, {u.Push, false}} {
		for _, p := range sortedKeys(group.m) {
			parent, leaf, err := parentOf(doc, p, true)
			if err != nil {
				return err
			}
			var list []any
			if v, ok := parent[leaf]; ok && v != nil {
				l, ok := v.([]any)
				if !ok {
					return invalid("update list", p, "current value is not a list")
				}
				list = l
			}
			for _, item := range group.m[p] {
				item = normalize(item)
				if group.uniq && containsJSON(list, item) {
					continue
				}
				list = append(list, item)
			}
			parent[leaf] = list
		}
	}
	return nil
}

// Mutator returns u as a Mutator (ErrNoChange when u is empty).
func (u Update) Mutator() Mutator {
	return func(doc map[string]any) error {
		if u.Empty() {
			return ErrNoChange
		}
		return u.Apply(doc)
	}
}

func containsJSON(list []any, item any) bool {
	for _, x := range list {
		if equalJSON(x, item) {
			return true
		}
	}
	return false
}

// normalize turns Go values into the decoded-JSON shapes a Mutator sees.
func normalize(v any) any {
	switch v.(type) {
	case nil, string, bool, json.Number, map[string]any, []any:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	m, err := DecodeObject([]byte(`{"v":` + string(b) + `}`))
	if err != nil {
		return v
	}
	return m["v"]
}

func parentOf(doc map[string]any, path string, create bool) (map[string]any, string, error) {
	parts := strings.Split(path, ".")
	cur := doc
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p]
		if !ok || next == nil {
			if !create {
				return nil, "", nil
			}
			m := map[string]any{}
			cur[p] = m
			cur = m
			continue
		}
		m, ok := next.(map[string]any)
		if !ok {
			return nil, "", invalid("update path", path, p+" is not an object")
		}
		cur = m
	}
	return cur, parts[len(parts)-1], nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
