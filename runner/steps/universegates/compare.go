package universegates

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Issue is one difference between two exports of a server's data:
// {entity, field, type, detail, ...}; classify adds phase and critical.
type Issue = map[string]any

// empty stands for every empty value (null, "", {}, []), which a
// round trip may turn into one another.
type empty struct{}

// stamp is a canonical time: kind "D" (a date) or "DT" (an instant, UTC).
type stamp struct{ kind, iso string }

// canon maps a decoded JSON value to a form where equivalent
// representations are equal: numbers and numeric strings to a rounded
// float, date and time strings to a stamp, empties to empty{}.
func canon(v any) any {
	switch x := v.(type) {
	case nil:
		return empty{}
	case bool:
		return x
	case float64:
		return math.Round(x*1e4) / 1e4
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return string(x)
		}
		return canon(f)
	case []any:
		if len(x) == 0 {
			return empty{}
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canon(e)
		}
		return out
	case map[string]any:
		if len(x) == 0 {
			return empty{}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = canon(e)
		}
		return out
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return empty{}
		}
		// A numeric string is a number, never a timestamp ("12.50" == 12.5).
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return canon(f)
		}
		if t, ok := canonTime(s); ok {
			return t
		}
		return s
	}
	return v
}

// canonTime reads a date (YYYY-MM-DD) or an RFC 3339-like time (a space
// for the T, Z or an offset, or none meaning UTC).
func canonTime(s string) (stamp, bool) {
	if len(s) == 10 && s[4] == '-' && s[7] == '-' {
		if d, err := time.Parse(time.DateOnly, s); err == nil {
			return stamp{"D", d.Format(time.DateOnly)}, true
		}
		return stamp{}, false
	}
	if !strings.Contains(s, "T") && strings.Count(s, " ") == 1 {
		s = strings.Replace(s, " ", "T", 1)
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return stamp{"DT", t.UTC().Format("2006-01-02T15:04:05.999999999")}, true
		}
	}
	return stamp{}, false
}

// semEqual compares canonical values, a being the original (load) side:
// an empty original matches anything (the server filled it in), a date
// matches a time on that day, an object matches when every non-empty
// original key survives and matches (added keys are enrichment), and a
// list matches in order or, for objects, in any order.
func semEqual(a, b any) bool {
	if deepEqual(a, b) {
		return true
	}
	if _, ok := a.(empty); ok {
		return true
	}
	ta, okA := a.(stamp)
	tb, okB := b.(stamp)
	if okA && okB {
		return ta.iso[:10] == tb.iso[:10] && (ta.kind == "D" || tb.kind == "D")
	}
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if okA && okB {
		for k, v := range ma {
			if _, isEmpty := v.(empty); isEmpty {
				continue
			}
			w, ok := mb[k]
			if !ok || !semEqual(v, w) {
				return false
			}
		}
		return true
	}
	la, okA := a.([]any)
	lb, okB := b.([]any)
	if !okA || !okB || len(la) != len(lb) {
		return false
	}
	inOrder := true
	for i := range la {
		if !semEqual(la[i], lb[i]) {
			inOrder = false
			break
		}
	}
	if inOrder {
		return true
	}
	if _, ok := la[0].(map[string]any); !ok {
		return false
	}
	pool := append([]any(nil), lb...)
	for _, x := range la {
		found := -1
		for j, y := range pool {
			if semEqual(x, y) {
				found = j
				break
			}
		}
		if found < 0 {
			return false
		}
		pool = append(pool[:found], pool[found+1:]...)
	}
	return true
}

func deepEqual(a, b any) bool {
	ja, errA := json.Marshal(canonKey(a))
	jb, errB := json.Marshal(canonKey(b))
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// canonKey makes canonical values marshalable for comparison.
func canonKey(v any) any {
	switch x := v.(type) {
	case empty:
		return "\x00empty"
	case stamp:
		return "\x00" + x.kind + x.iso
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonKey(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = canonKey(e)
		}
		return out
	}
	return v
}

func valuesEqual(a, b any) bool { return semEqual(canon(a), canon(b)) }

// Normalize sorts every list of objects by "id" (else its alphabetically
// first key) so exports compare independently of order.
func Normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Normalize(e)
		}
		if len(out) > 0 {
			if first, ok := out[0].(map[string]any); ok {
				key := "id"
				if _, has := first["id"]; !has {
					key = ""
					for k := range first {
						if key == "" || k < key {
							key = k
						}
					}
				}
				sort.SliceStable(out, func(i, j int) bool {
					mi, _ := out[i].(map[string]any)
					mj, _ := out[j].(map[string]any)
					return fmt.Sprint(mi[key]) < fmt.Sprint(mj[key])
				})
			}
		}
		return out
	}
	return v
}

// jsonType names a decoded value's JSON type.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case float64, json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

func isEmptyValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// idKey picks the key that identifies the records of a list.
func idKey(a, b []any) string {
	var sample any
	if len(a) > 0 {
		sample = a[0]
	} else if len(b) > 0 {
		sample = b[0]
	}
	m, ok := sample.(map[string]any)
	if !ok {
		return ""
	}
	for _, k := range []string{"id", "Id", "ID", "email_id", "ts", "name"} {
		if _, ok := m[k]; ok {
			return k
		}
	}
	return ""
}

type tally struct {
	count, nonEmpty int
	valueKeys       map[string]bool
	fromType        string
	toType          string
	sampleA         string
	sampleB         string
	aCount, bCount  int
	benignReshape   bool
}

// Compare lists the differences between two normalized exports (entity →
// list of records), one issue per (entity, field, kind) with a count:
// count_mismatch, dropped_field (in a, not in b), added_field,
// type_coercion and value_mismatch. A dropped object field whose keys
// mostly reappear as added fields of the entity is a benign reshape.
func Compare(a, b map[string]any, labelA, labelB string) []Issue {
	type key struct{ entity, field, kind string }
	counts := map[key]*tally{}
	get := func(k key) *tally {
		t := counts[k]
		if t == nil {
			t = &tally{valueKeys: map[string]bool{}}
			counts[k] = t
		}
		return t
	}
	entities := map[string]bool{}
	for k := range a {
		entities[k] = true
	}
	for k := range b {
		entities[k] = true
	}
	for entity := range entities {
		av, aok := a[entity]
		bv, bok := b[entity]
		if !aok {
			av = []any{}
		}
		if !bok {
			bv = []any{}
		}
		al, aIsList := av.([]any)
		bl, bIsList := bv.([]any)
		if !aIsList || !bIsList {
			if jsonType(av) != jsonType(bv) {
				t := get(key{entity, "", "type_coercion"})
				t.fromType, t.toType, t.count = jsonType(av), jsonType(bv), 1
			}
			continue
		}
		id := idKey(al, bl)
		index := func(l []any) map[string]map[string]any {
			out := map[string]map[string]any{}
			for i, item := range l {
				m, _ := item.(map[string]any)
				k := strconv.Itoa(i)
				if id != "" && m != nil {
					if v, ok := m[id]; ok {
						k = fmt.Sprint(v)
					}
				}
				if m != nil && m["entity_id"] != nil {
					k = fmt.Sprint(m["entity_id"]) + "|" + k
				}
				out[k] = m
			}
			return out
		}
		if len(al) != len(bl) {
			t := get(key{entity, "", "count_mismatch"})
			t.aCount, t.bCount, t.count = len(al), len(bl), 1
		}
		ai, bi := index(al), index(bl)
		for k, ar := range ai {
			br, ok := bi[k]
			if !ok || ar == nil || br == nil {
				continue
			}
			for f, ov := range ar {
				ev, has := br[f]
				switch {
				case !has:
					t := get(key{entity, f, "dropped_field"})
					t.count++
					if !isEmptyValue(ov) {
						t.nonEmpty++
					}
					if m, ok := ov.(map[string]any); ok {
						for vk := range m {
							t.valueKeys[vk] = true
						}
					}
				case valuesEqual(ov, ev):
				case jsonType(ov) != jsonType(ev) && ov != nil && ev != nil:
					t := get(key{entity, f, "type_coercion"})
					if t.count == 0 {
						t.fromType, t.toType = jsonType(ov), jsonType(ev)
					}
					t.count++
				default:
					t := get(key{entity, f, "value_mismatch"})
					if t.count == 0 {
						t.sampleA, t.sampleB = trunc(fmt.Sprint(ov)), trunc(fmt.Sprint(ev))
					}
					t.count++
				}
			}
			for f := range br {
				if _, ok := ar[f]; !ok {
					get(key{entity, f, "added_field"}).count++
				}
			}
		}
	}
	added := map[string]map[string]bool{}
	for k := range counts {
		if k.kind == "added_field" {
			if added[k.entity] == nil {
				added[k.entity] = map[string]bool{}
			}
			added[k.entity][k.field] = true
		}
	}
	for k, t := range counts {
		if k.kind != "dropped_field" || len(t.valueKeys) == 0 {
			continue
		}
		n := 0
		for vk := range t.valueKeys {
			if added[k.entity][vk] {
				n++
			}
		}
		t.benignReshape = float64(n) >= 0.6*float64(len(t.valueKeys))
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].entity != keys[j].entity {
			return keys[i].entity < keys[j].entity
		}
		if keys[i].field != keys[j].field {
			return keys[i].field < keys[j].field
		}
		return keys[i].kind < keys[j].kind
	})
	issues := make([]Issue, 0, len(keys))
	for _, k := range keys {
		t := counts[k]
		var detail string
		switch k.kind {
		case "dropped_field":
			detail = fmt.Sprintf("Field present in %s but missing in %s (%d occurrences, %d non-empty)", labelA, labelB, t.count, t.nonEmpty)
		case "added_field":
			detail = fmt.Sprintf("Field present in %s but missing in %s (%d occurrences)", labelB, labelA, t.count)
		case "type_coercion":
			detail = fmt.Sprintf("%s → %s (%d occurrences)", t.fromType, t.toType, t.count)
		case "count_mismatch":
			detail = fmt.Sprintf("%s has %d entities, %s has %d", labelA, t.aCount, labelB, t.bCount)
		case "value_mismatch":
			detail = fmt.Sprintf("Values differ (%d occurrences), sample: %q vs %q", t.count, t.sampleA, t.sampleB)
		}
		is := Issue{"entity": k.entity, "field": k.field, "type": k.kind, "detail": detail}
		if k.kind == "dropped_field" {
			is["non_empty_count"] = t.nonEmpty
			if t.benignReshape {
				is["benign_reshape"] = true
			}
		}
		issues = append(issues, is)
	}
	return issues
}

func trunc(s string) string {
	if len(s) > 100 {
		return s[:100]
	}
	return s
}

// Classify marks each issue's phase and whether it is critical: load
// issues are critical when they lose data (a count or value mismatch, a
// dropped non-empty field that is not a reshape); every idempotency
// issue (export 1 vs export 2) is. It reports whether nothing critical
// was found.
func Classify(load, idempotency []Issue) ([]Issue, bool) {
	out := make([]Issue, 0, len(load)+len(idempotency))
	compatible := true
	for _, i := range load {
		c := Issue{}
		for k, v := range i {
			c[k] = v
		}
		c["phase"] = "load"
		if i["type"] == "added_field" {
			c["phase"] = "export"
		}
		crit := false
		switch i["type"] {
		case "count_mismatch", "value_mismatch":
			crit = true
		case "dropped_field":
			n, _ := i["non_empty_count"].(int)
			crit = n > 0 && i["benign_reshape"] != true
		}
		c["critical"] = crit
		compatible = compatible && !crit
		out = append(out, c)
	}
	for _, i := range idempotency {
		c := Issue{}
		for k, v := range i {
			c[k] = v
		}
		c["phase"], c["critical"] = "idempotency", true
		compatible = false
		out = append(out, c)
	}
	return out, compatible
}
