package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Op is a filter predicate.
type Op string

// Filter operators. Comparisons (Gte, Lte) order numbers numerically and
// strings lexically (ISO timestamps compare correctly); a number never
// compares with a string.
const (
	OpEq           Op = "eq"             // present and equal
	OpNe           Op = "ne"             // present and not equal
	OpGte          Op = "gte"            // present and >=
	OpLte          Op = "lte"            // present and <=
	OpIn           Op = "in"             // present and equal to one of Value ([]any)
	OpExists       Op = "exists"         // Value true: present and not null; false: absent or null
	OpLteOrAbsent  Op = "lte_or_absent"  // absent, null, or <=
	OpAbsentOrNull Op = "absent_or_null" // absent or null (Value ignored)
)

// Filter is one predicate on a dotted path of a record's body.
type Filter struct {
	Path  string
	Op    Op
	Value any
}

// Validate checks the operator and value shape.
func (f Filter) Validate() error {
	if f.Path == "" || strings.Contains(f.Path, "..") || strings.HasPrefix(f.Path, ".") || strings.HasSuffix(f.Path, ".") {
		return invalid("filter path", f.Path, "want a dotted path such as metadata.deploy_step_id")
	}
	switch f.Op {
	case OpEq, OpNe, OpGte, OpLte, OpLteOrAbsent, OpAbsentOrNull:
	case OpIn:
		if _, ok := f.Value.([]any); !ok {
			return invalid("filter value", f.Path, "in needs a []any")
		}
	case OpExists:
		if _, ok := f.Value.(bool); !ok {
			return invalid("filter value", f.Path, "exists needs a bool")
		}
	default:
		return invalid("filter op", string(f.Op), "unknown operator")
	}
	return nil
}

// Lookup returns the value at a dotted path of a decoded JSON object and
// whether it is present (null counts as present with a nil value).
func Lookup(doc map[string]any, path string) (any, bool) {
	var cur any = doc
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// Match reports whether doc satisfies f (f must be valid).
func (f Filter) Match(doc map[string]any) bool {
	v, present := Lookup(doc, f.Path)
	null := !present || v == nil
	switch f.Op {
	case OpEq:
		return !null && equalJSON(v, f.Value)
	case OpNe:
		return !null && !equalJSON(v, f.Value)
	case OpGte:
		c, ok := CompareJSON(v, f.Value)
		return !null && ok && c >= 0
	case OpLte:
		c, ok := CompareJSON(v, f.Value)
		return !null && ok && c <= 0
	case OpLteOrAbsent:
		if null {
			return true
		}
		c, ok := CompareJSON(v, f.Value)
		return ok && c <= 0
	case OpIn:
		if null {
			return false
		}
		for _, w := range f.Value.([]any) {
			if equalJSON(v, w) {
				return true
			}
		}
		return false
	case OpExists:
		return f.Value.(bool) == !null
	case OpAbsentOrNull:
		return null
	}
	return false
}

func canonicalJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) != nil {
		return b
	}
	out, _ := json.Marshal(x)
	return out
}

func equalJSON(a, b any) bool {
	if an, bn, ok := numbers(a, b); ok {
		return an == bn
	}
	return bytes.Equal(canonicalJSON(a), canonicalJSON(b))
}

func numbers(a, b any) (float64, float64, bool) {
	af, aok := toFloat(a)
	bf, bok := toFloat(b)
	return af, bf, aok && bok
}

func toFloat(v any) (float64, bool) {
	switch t := v.(type) {
	case json.Number:
		f, err := t.Float64()
		return f, err == nil
	case float64:
		return t, true
	case float32:
		return float64(t), true
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case int32:
		return float64(t), true
	case uint64:
		return float64(t), true
	}
	return 0, false
}

// CompareJSON orders two JSON scalars: numbers numerically, strings
// lexically, bools false < true. ok is false for mixed or non-scalar
// kinds.
func CompareJSON(a, b any) (int, bool) {
	if af, bf, ok := numbers(a, b); ok {
		switch {
		case af < bf:
			return -1, true
		case af > bf:
			return 1, true
		}
		return 0, true
	}
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok {
		return strings.Compare(as, bs), true
	}
	ab, aok := a.(bool)
	bb, bok := b.(bool)
	if aok && bok {
		switch {
		case ab == bb:
			return 0, true
		case !ab:
			return -1, true
		}
		return 1, true
	}
	return 0, false
}

// String renders a filter for messages.
func (f Filter) String() string { return fmt.Sprintf("%s %s %v", f.Path, f.Op, f.Value) }
