// Package jsonvalue works on generic JSON values as the trigger engine and
// the outcome verifier see them: map[string]any, []any, json.Number,
// string, bool and nil. Numbers stay json.Number so integers keep their
// precision and round-trip unchanged.
//
// Both evaluate the same small predicate language of the reference
// (equals, exists, a dotted path with [n] indexes), so its semantics live
// here once:
//
//	v, err := jsonvalue.Decode(body)          // exactly one value
//	x := jsonvalue.Lookup(v, "items[0].id")   // nil when absent
//	jsonvalue.Equal(x, json.Number("1.0"))    // numbers by value
//	jsonvalue.NonEmpty(x)                     // the exists predicate
package jsonvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// ErrTrailingData is Decode's error for input with more after the value.
var ErrTrailingData = errors.New("trailing data after JSON value")

// Decode decodes exactly one JSON value, numbers as json.Number.
func Decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrTrailingData
	}
	return v, nil
}

// Equal is deep equality with numbers compared by value (1 == 1.0).
func Equal(a, b any) bool {
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
		if x == y {
			return true
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
			if !Equal(x[i], y[i]) {
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
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// NonEmpty is the exists predicate's notion of presence: not nil, not "",
// not [].
func NonEmpty(v any) bool {
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

// Paths: dot-separated segments, each a word with optional [n] indexes; a
// [*] index means the list itself.
var (
	segmentRe = regexp.MustCompile(`^(\w+)((?:\[(?:\d+|\*)\])*)$`)
	indexRe   = regexp.MustCompile(`\[(\d+|\*)\]`)
)

// BadSegment returns the first segment of path that is not a valid path
// segment, and whether there is one. Callers word their own error (the
// reference's messages differ between its users).
func BadSegment(path string) (string, bool) {
	for _, seg := range strings.Split(path, ".") {
		if !segmentRe.MatchString(seg) {
			return seg, true
		}
	}
	return "", false
}

// Lookup walks data along path; a missing key or index, or an invalid
// path, yields nil.
func Lookup(data any, path string) any {
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
