package envsdk

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Schemer lets a type state its own JSON Schema, overriding derivation.
// Date, TimeOfDay and Decimal implement it.
type Schemer interface {
	JSONSchema() map[string]any
}

// Date is a calendar date ("2026-03-01"); its schema is
// {"type":"string","format":"date"}.
type Date string

// JSONSchema implements Schemer.
func (Date) JSONSchema() map[string]any { return map[string]any{"type": "string", "format": "date"} }

// TimeOfDay is a time of day ("09:30:00"); its schema is
// {"type":"string","format":"time"}.
type TimeOfDay string

// JSONSchema implements Schemer.
func (TimeOfDay) JSONSchema() map[string]any {
	return map[string]any{"type": "string", "format": "time"}
}

// Decimal is an exact decimal number carried as a string ("12.50"); its
// schema is {"type":"string"}.
type Decimal string

// JSONSchema implements Schemer.
func (Decimal) JSONSchema() map[string]any { return map[string]any{"type": "string"} }

var (
	timeType       = reflect.TypeFor[time.Time]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	schemerType    = reflect.TypeFor[Schemer]()
	textMarshaler  = reflect.TypeFor[encoding.TextMarshaler]()
)

// field is one JSON property of a struct, as encoding/json sees it.
type field struct {
	name     string
	index    []int
	typ      reflect.Type
	optional bool // pointer, omitempty or omitzero
	tag      reflect.StructTag
}

// objectSchema derives the JSON Schema of an argument object.
// The type must be a struct (or pointer to one) or a map; anything else is
// an error, because MCP tool arguments are always an object.
func objectSchema(t reflect.Type) (map[string]any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if t == timeType || t.Implements(schemerType) {
			return nil, fmt.Errorf("%s: argument type must be a struct or map, not a scalar", t)
		}
	case reflect.Map:
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	case reflect.Interface:
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	default:
		return nil, fmt.Errorf("%s: argument type must be a struct or map", t)
	}
	return structSchema(t, map[reflect.Type]bool{})
}

func structSchema(t reflect.Type, seen map[reflect.Type]bool) (map[string]any, error) {
	if seen[t] {
		return map[string]any{"type": "object"}, nil // recursive type: stop here
	}
	seen[t] = true
	defer delete(seen, t)
	props := map[string]any{}
	var required []string
	for _, f := range structFields(t) {
		s, err := typeSchema(f.typ, seen)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.name, err)
		}
		if d, ok := fieldDescription(f.tag); ok {
			s["description"] = d
		}
		base := f.typ
		for base.Kind() == reflect.Pointer {
			base = base.Elem()
		}
		if e, ok := f.tag.Lookup("enum"); ok {
			vals, err := enumValues(base, e)
			if err != nil {
				return nil, fmt.Errorf("field %s: enum: %w", f.name, err)
			}
			s["enum"] = vals
		}
		d, hasDefault := f.tag.Lookup("default")
		if hasDefault {
			v, err := typedValue(base, d)
			if err != nil {
				return nil, fmt.Errorf("field %s: default: %w", f.name, err)
			}
			s["default"] = v
		}
		props[f.name] = s
		if !hasDefault && !f.optional {
			required = append(required, f.name)
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	return out, nil
}

// fieldDescription reads a field's description: the description tag, else
// the jsonschema tag, whose whole value is the description in
// jsonschema-go (the schema library of the official MCP Go SDK), so tool
// structs written for that SDK keep their descriptions here. The
// "key=value,..." form of other schema libraries contributes its
// description key only.
func fieldDescription(tag reflect.StructTag) (string, bool) {
	if d, ok := tag.Lookup("description"); ok {
		return d, true
	}
	js, ok := tag.Lookup("jsonschema")
	if !ok || js == "" {
		return "", false
	}
	if keyValueTag(js) {
		for _, kv := range strings.Split(js, ",") {
			if d, ok := strings.CutPrefix(kv, "description="); ok {
				return d, true
			}
		}
		return "", false
	}
	return js, true
}

// tagKeyRE is one "key=value" or bare keyword item of a key=value tag.
var tagKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(=.*)?$`)

// keyValueTag: every comma item is a key=value or a bare keyword, and one
// item has a value or is a known keyword (so a one-word description like
// "Subject" stays a description).
func keyValueTag(js string) bool {
	marked := false
	for _, item := range strings.Split(js, ",") {
		if !tagKeyRE.MatchString(item) {
			return false
		}
		switch {
		case strings.Contains(item, "="), item == "required", item == "nullable", item == "omitempty":
			marked = true
		}
	}
	return marked
}

// typeSchema maps one Go type to its schema (the reference's type table).
func typeSchema(t reflect.Type, seen map[reflect.Type]bool) (map[string]any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(schemerType) {
		return reflect.Zero(t).Interface().(Schemer).JSONSchema(), nil
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case t == rawMessageType:
		return map[string]any{}, nil
	case t.Name() == "UUID" && t.Implements(textMarshaler):
		return map[string]any{"type": "string", "format": "uuid"}, nil
	case t.Name() == "Decimal":
		return map[string]any{"type": "string"}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return map[string]any{"type": "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			// encoding/json writes []byte as a base64 string.
			return map[string]any{"type": "string", "contentEncoding": "base64"}, nil
		}
		items, err := typeSchema(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		s := map[string]any{"type": "array"}
		if len(items) > 0 {
			s["items"] = items
		}
		return s, nil
	case reflect.Map:
		return map[string]any{"type": "object"}, nil
	case reflect.Struct:
		return structSchema(t, seen)
	case reflect.Interface:
		return map[string]any{}, nil
	}
	return nil, fmt.Errorf("type %s has no JSON Schema", t)
}

// structFields lists the JSON properties of a struct in declaration order,
// flattening embedded structs the way encoding/json does (shallower names
// win).
func structFields(t reflect.Type) []field {
	var out []field
	names := map[string]bool{}
	var walk func(t reflect.Type, index []int, depth int)
	walk = func(t reflect.Type, index []int, depth int) {
		var nested []func()
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(append([]int{}, index...), i)
			if sf.Anonymous && name == "" {
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					nested = append(nested, func() { walk(ft, idx, depth+1) })
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if names[name] {
				continue
			}
			names[name] = true
			optional := sf.Type.Kind() == reflect.Pointer ||
				strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
			out = append(out, field{name: name, index: idx, typ: sf.Type, optional: optional, tag: sf.Tag})
		}
		for _, n := range nested {
			n()
		}
	}
	walk(t, nil, 0)
	return out
}

// enumValues parses an enum tag ("a,b" or "1,2") into values of the
// field's JSON type.
func enumValues(t reflect.Type, tag string) ([]any, error) {
	parts := strings.Split(tag, ",")
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		v, err := typedValue(t, strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// typedValue turns a tag string into the JSON value of the field's type,
// so that default:"1" on an int field is emitted as 1, not "1".
func typedValue(t reflect.Type, s string) (any, error) {
	if t.Implements(schemerType) || t == timeType {
		return s, nil
	}
	switch t.Kind() {
	case reflect.String:
		return s, nil
	case reflect.Bool:
		b, err := parseBool(s)
		if err != nil {
			return nil, err
		}
		return b, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, t.Bits())
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", s)
		}
		return n, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, t.Bits())
		if err != nil {
			return nil, fmt.Errorf("%q is not an unsigned integer", s)
		}
		return n, nil
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, t.Bits())
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return f, nil
	}
	// Anything else: the tag holds JSON ([] or {} defaults).
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("%q is not JSON for %s", s, t)
	}
	return v, nil
}

// parseBool accepts the spellings REST extensions coerce.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean", s)
}

// applyDefaults sets every top-level field that has a default tag, so that
// decoding arguments over the result leaves defaults where keys are absent.
func applyDefaults(v reflect.Value) error {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	for _, f := range structFields(v.Type()) {
		d, ok := f.tag.Lookup("default")
		if !ok {
			continue
		}
		base := f.typ
		for base.Kind() == reflect.Pointer {
			base = base.Elem()
		}
		val, err := typedValue(base, d)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(val)
		fv, ok := fieldByIndex(v, f.index)
		if !ok {
			continue
		}
		if err := json.Unmarshal(b, fv.Addr().Interface()); err != nil {
			return fmt.Errorf("default of %s: %w", f.name, err)
		}
	}
	return nil
}

func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return reflect.Value{}, false
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}
