package envoutcomeverifier

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/agentenv/agentenv/internal/jsonvalue"
)

// The predicates and extraction below follow the gateway's trigger checks
// so that a task can grade with the same
// expressions its triggers use; the value semantics are shared with the
// trigger engine through internal/jsonvalue.

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
	if seg, bad := jsonvalue.BadSegment(x.Path); bad {
		return fmt.Errorf("%s: invalid path segment %q in %q", where, seg, x.Path)
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

func decodeJSON(b []byte) (any, error) { return jsonvalue.Decode(b) }

func asText(v any) string { return jsonvalue.Text(v) }

func jsonEqual(a, b any) bool { return jsonvalue.Equal(a, b) }

func nonEmpty(v any) bool { return jsonvalue.NonEmpty(v) }

func applyPath(data any, path string) any { return jsonvalue.Lookup(data, path) }
