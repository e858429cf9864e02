package jsonobj

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Extra holds the members of an object its struct does not declare, each
// value as it was written.
type Extra map[string]json.RawMessage

// Decode decodes the object data into v, a pointer to a struct, and sets
// *extra to the members v's type does not declare (nil when there are
// none).
func Decode(data []byte, v any, extra *Extra) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	known := Known(reflect.TypeOf(v))
	var out Extra
	for k, raw := range all {
		if known[k] {
			continue
		}
		if out == nil {
			out = Extra{}
		}
		out[k] = raw
	}
	*extra = out
	return nil
}

// Encode encodes v, a struct, as json.Marshal does, then appends the
// members of extra that v's type does not declare, in key order. A member
// v declares is always written from v, never from extra.
func Encode(v any, extra Extra) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(extra) == 0 {
		return b, nil
	}
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("jsonobj: %T does not encode as an object", v)
	}
	known := Known(reflect.TypeOf(v))
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !known[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	empty := len(bytes.TrimSpace(b[1:len(b)-1])) == 0
	for _, k := range keys {
		if !json.Valid(extra[k]) {
			return nil, fmt.Errorf("jsonobj: member %q is not valid JSON", k)
		}
		if !empty {
			buf.WriteByte(',')
		}
		empty = false
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(extra[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

var knownCache sync.Map // reflect.Type → map[string]bool

// Known returns the object member names the struct type t (or a pointer
// to one) declares through its json tags, embedded structs included.
func Known(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if m, ok := knownCache.Load(t); ok {
		return m.(map[string]bool)
	}
	m := map[string]bool{}
	addKnown(t, m)
	knownCache.Store(t, m)
	return m
}

func addKnown(t reflect.Type, m map[string]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addKnown(ft, m)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = true
	}
}
