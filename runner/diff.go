package runner

import (
	"reflect"
	"sort"
	"strings"
)

// Ops is a path-level change of a context document: what one step changed.
// Lists that only grew are add-to-set operations, so that
// concurrent writers merge as set unions.
type Ops struct {
	Sets      []SetOp      `json:"sets,omitempty"`
	Unsets    [][]string   `json:"unsets,omitempty"`
	AddToSets []AddToSetOp `json:"add_to_sets,omitempty"`
}

// SetOp sets Path to Value.
type SetOp struct {
	Path  []string `json:"path"`
	Value any      `json:"value"`
}

// AddToSetOp adds each of Values to the list at Path unless present.
type AddToSetOp struct {
	Path   []string `json:"path"`
	Values []any    `json:"values"`
}

// Empty reports whether o changes nothing.
func (o Ops) Empty() bool { return len(o.Sets)+len(o.Unsets)+len(o.AddToSets) == 0 }

// Paths lists the dotted paths o touches, sorted (for display and tests).
func (o Ops) Paths() []string {
	var out []string
	for _, s := range o.Sets {
		out = append(out, "set "+strings.Join(s.Path, "."))
	}
	for _, u := range o.Unsets {
		out = append(out, "unset "+strings.Join(u, "."))
	}
	for _, a := range o.AddToSets {
		out = append(out, "add "+strings.Join(a.Path, "."))
	}
	sort.Strings(out)
	return out
}

// Diff returns the operations that turn before into after. Both are
// JSON-shaped documents.
func Diff(before, after map[string]any) Ops {
	var o Ops
	diffMaps(nil, before, after, &o)
	return o
}

func diffMaps(path []string, a, b map[string]any, o *Ops) {
	keys := make([]string, 0, len(a)+len(b))
	for k := range b {
		keys = append(keys, k)
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := append(append([]string{}, path...), k)
		av, inA := a[k]
		bv, inB := b[k]
		switch {
		case !inB:
			o.Unsets = append(o.Unsets, p)
		case !inA:
			o.Sets = append(o.Sets, SetOp{Path: p, Value: deepCopy(bv)})
		default:
			diffValues(p, av, bv, o)
		}
	}
}

func diffValues(p []string, av, bv any, o *Ops) {
	am, aIsMap := av.(map[string]any)
	bm, bIsMap := bv.(map[string]any)
	if aIsMap && bIsMap {
		diffMaps(p, am, bm, o)
		return
	}
	al, aIsList := av.([]any)
	bl, bIsList := bv.([]any)
	if aIsList && bIsList && len(bl) > len(al) && reflect.DeepEqual(al, bl[:len(al)]) {
		o.AddToSets = append(o.AddToSets, AddToSetOp{Path: p, Values: deepCopy(bl[len(al):]).([]any)})
		return
	}
	if !reflect.DeepEqual(av, bv) {
		o.Sets = append(o.Sets, SetOp{Path: p, Value: deepCopy(bv)})
	}
}

// Apply applies o to doc in place: sets create missing parents, add-to-set
// appends values not already present.
func (o Ops) Apply(doc map[string]any) {
	for _, s := range o.Sets {
		parent := walk(doc, s.Path[:len(s.Path)-1])
		parent[s.Path[len(s.Path)-1]] = deepCopy(s.Value)
	}
	for _, u := range o.Unsets {
		delete(walk(doc, u[:len(u)-1]), u[len(u)-1])
	}
	for _, a := range o.AddToSets {
		parent := walk(doc, a.Path[:len(a.Path)-1])
		key := a.Path[len(a.Path)-1]
		list, _ := parent[key].([]any)
	next:
		for _, v := range a.Values {
			for _, e := range list {
				if reflect.DeepEqual(e, v) {
					continue next
				}
			}
			list = append(list, deepCopy(v))
		}
		if list == nil {
			list = []any{}
		}
		parent[key] = list
	}
}

func walk(doc map[string]any, path []string) map[string]any {
	m := doc
	for _, k := range path {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	return m
}
