package envoutcomeverifier

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// The predicates and extraction below follow the gateway's trigger checks
// (gateway.md §9.2, §9.4) so that a task can grade with the same
// expressions its triggers use. gateway/triggers keeps its own copy
// unexported; if it exports one, this file should use it.

// Predicate is exactly one of regex, equals, exists.
type Predicate struct {
	Regex  *string         `json:"regex,omitempty"`
	Equals json.RawMessage `json:"equals,omitempty"`
	Exists *bool           `json:"exists,omitempty"`
	re     *regexp.Regexp
	eq     any
}

func (p *Predicate) compile(where string) error {
	n := 0
	if p.Regex != nil {
		n++
	}
	if p.Equals != nil {
		n++
	}
	if p.Exists != nil {
		n++
	}
	if n != 1 {
		return fmt.Errorf("%s: a predicate has exactly one of regex, equals, exists", where)
	}
	if p.Regex != nil {
		re, err := regexp.Compile(*p.Regex)
		if err != nil {
			return fmt.Errorf("%s.regex: %v", where, err)
		}
		p.re = re
	}
	if p.Equals != nil {
		v, err := decodeJSON(p.Equals)
		if err != nil {
			return fmt.Errorf("%s.equals: %v", where, err)
		}
		p.eq = v
	}
	return nil
}

// Eval applies the predicate to a value.
func (p *Predicate) Eval(v any) bool {
	switch {
	case p.re != nil:
		return p.re.MatchString(asText(v))
	case p.Equals != nil:
		return jsonEqual(v, p.eq)
	}
	return nonEmpty(v) == *p.Exists
}

// Extract is a dot path, or {path, match, take}: the first list item at
// path whose fields match every predicate, then item[take] or the item.
type Extract struct {
	Path  string               `json:"path"`
	Match map[string]Predicate `json:"match,omitempty"`
	Take  string               `json:"take,omitempty"`
	obj   bool
}

// UnmarshalJSON accepts a string or the object form.
func (x *Extract) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*x = Extract{Path: s}
		return nil
	}
	type plain Extract
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("extract: a dot path or {path, match, take}: %w", err)
	}
	*x = Extract(p)
	x.obj = true
	return nil
}

func (x *Extract) compile(where string) error {
	if x.Path == "" {
		return fmt.Errorf("%s.path: required", where)
	}
	for _, seg := range strings.Split(x.Path, ".") {
		if !segmentRe.MatchString(seg) {
			return fmt.Errorf("%s: invalid path segment %q in %q", where, seg, x.Path)
		}
	}
	for k, p := range x.Match {
		if err := p.compile(where + ".match." + k); err != nil {
			return err
		}
		x.Match[k] = p
	}
	return nil
}

// Apply extracts from data (raw is the text when data is not JSON).
func (x *Extract) Apply(data any) any {
	if x == nil {
		return data
	}
	if !x.obj {
		return applyPath(data, x.Path)
	}
	items, ok := applyPath(data, x.Path).([]any)
	if !ok {
		return nil
	}
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		all := true
		for f, p := range x.Match {
			if !p.Eval(m[f]) {
				all = false
				break
			}
		}
		if all {
			if x.Take != "" {
				return m[x.Take]
			}
			return m
		}
	}
	return nil
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func asText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		rx, okx := new(big.Rat).SetString(x.String())
		ry, oky := new(big.Rat).SetString(y.String())
		return okx && oky && rx.Cmp(ry) == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

func nonEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return x != ""
	case []any:
		return len(x) != 0
	}
	return true
}

var (
	segmentRe = regexp.MustCompile(`^(\w+)((?:\[(?:\d+|\*)\])*)$`)
	indexRe   = regexp.MustCompile(`\[(\d+|\*)\]`)
)

func applyPath(data any, path string) any {
	cur := data
	for _, seg := range strings.Split(path, ".") {
		m := segmentRe.FindStringSubmatch(seg)
		if m == nil {
			return nil
		}
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = obj[m[1]]; !ok {
			return nil
		}
		for _, idx := range indexRe.FindAllStringSubmatch(m[2], -1) {
			if idx[1] == "*" {
				continue
			}
			list, ok := cur.([]any)
			n, err := strconv.Atoi(idx[1])
			if !ok || err != nil || n >= len(list) {
				return nil
			}
			cur = list[n]
		}
	}
	return cur
}
