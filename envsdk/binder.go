package envsdk

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// binder checks and coerces REST extension parameters against the fields
// of the handler's input struct: query strings and loosely typed
// JSON become the declared types, unknown and missing names are rejected.
type binder struct {
	passthrough bool // In is a map or any: no binding
	fields      []field
}

func newBinder(t reflect.Type) *binder {
	t = derefType(t)
	if t.Kind() != reflect.Struct {
		return &binder{passthrough: true}
	}
	return &binder{fields: structFields(t)}
}

// bind returns the coerced arguments as a JSON object.
func (b *binder) bind(args map[string]any) (json.RawMessage, error) {
	if args == nil {
		args = map[string]any{}
	}
	if b.passthrough {
		return json.Marshal(args)
	}
	known := map[string]bool{}
	for _, f := range b.fields {
		known[f.name] = true
	}
	var unknown []string
	for k := range args {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unknown parameter: %s", strings.Join(unknown, ", "))
	}
	out := make(map[string]any, len(args))
	for _, f := range b.fields {
		v, ok := args[f.name]
		_, hasDefault := f.tag.Lookup("default")
		if !ok {
			if !hasDefault && !f.optional {
				return nil, fmt.Errorf("missing parameter: %s", f.name)
			}
			continue
		}
		cv, err := coerce(f.typ, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		if e, ok := f.tag.Lookup("enum"); ok && cv != nil {
			allowed, err := enumValues(derefType(f.typ), e)
			if err == nil && !containsJSON(allowed, cv) {
				return nil, fmt.Errorf("%s: %v is not one of %s", f.name, jsonText(cv), e)
			}
		}
		out[f.name] = cv
	}
	return json.Marshal(out)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func containsJSON(set []any, v any) bool {
	want := jsonText(v)
	return slices.ContainsFunc(set, func(x any) bool { return jsonText(x) == want })
}

// coerce converts one value (a string from a query, or a decoded JSON
// value with json.Number numbers) to the JSON value of type t.
func coerce(t reflect.Type, v any) (any, error) {
	if v == nil {
		if t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface || t.Kind() == reflect.Map || t.Kind() == reflect.Slice {
			return nil, nil
		}
		return nil, fmt.Errorf("must not be null")
	}
	t = derefType(t)
	switch t {
	case timeType:
		s, err := asString(v)
		if err != nil {
			return nil, err
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, fmt.Errorf("%q is not an RFC 3339 date-time", s)
		}
		return s, nil
	case reflect.TypeFor[Date]():
		s, err := asString(v)
		if err == nil {
			_, err = time.Parse(time.DateOnly, s)
		}
		if err != nil {
			return nil, fmt.Errorf("%v is not a date (YYYY-MM-DD)", v)
		}
		return s, nil
	case reflect.TypeFor[TimeOfDay]():
		s, err := asString(v)
		if err == nil {
			err = parseTimeOfDay(s)
		}
		if err != nil {
			return nil, fmt.Errorf("%v is not a time of day (HH:MM[:SS])", v)
		}
		return s, nil
	}
	if t.Name() == "Decimal" && t.Kind() == reflect.String {
		s := fmt.Sprint(v)
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return nil, fmt.Errorf("%q is not a decimal number", s)
		}
		return s, nil
	}
	if t.Name() == "UUID" && reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		s, err := asString(v)
		if err != nil {
			return nil, err
		}
		u := reflect.New(t).Interface().(encoding.TextUnmarshaler)
		if err := u.UnmarshalText([]byte(s)); err != nil {
			return nil, fmt.Errorf("%q is not a UUID", s)
		}
		return s, nil
	}
	switch t.Kind() {
	case reflect.String:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, fmt.Errorf("%s is not a string", jsonText(v))
	case reflect.Bool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			return parseBool(x)
		case json.Number:
			return parseBool(x.String())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if s, err := asString(v); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, t.Bits()); err == nil {
				return n, nil // exact, even beyond 2^53
			}
		}
		f, err := asNumber(v)
		if err != nil {
			return nil, err
		}
		if f != math.Trunc(f) {
			return nil, fmt.Errorf("%v is not an integer", v)
		}
		n, err := strconv.ParseInt(strconv.FormatFloat(f, 'f', -1, 64), 10, t.Bits())
		if err != nil {
			return nil, fmt.Errorf("%v is out of range", v)
		}
		return n, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if s, err := asString(v); err == nil {
			if n, err := strconv.ParseUint(strings.TrimSpace(s), 10, t.Bits()); err == nil {
				return n, nil
			}
		}
		f, err := asNumber(v)
		if err != nil {
			return nil, err
		}
		if f != math.Trunc(f) || f < 0 {
			return nil, fmt.Errorf("%v is not an unsigned integer", v)
		}
		n, err := strconv.ParseUint(strconv.FormatFloat(f, 'f', -1, 64), 10, t.Bits())
		if err != nil {
			return nil, fmt.Errorf("%v is out of range", v)
		}
		return n, nil
	case reflect.Float32, reflect.Float64:
		return asNumber(v)
	case reflect.Slice, reflect.Array:
		list, ok := v.([]any)
		if !ok {
			list = []any{v} // one query value for a list parameter
		}
		out := make([]any, len(list))
		for i, x := range list {
			c, err := coerce(t.Elem(), x)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = c
		}
		return out, nil
	default:
		// Objects and any: a query string may carry JSON.
		if s, ok := v.(string); ok && t.Kind() != reflect.Interface {
			var x any
			if err := json.Unmarshal([]byte(s), &x); err != nil {
				return nil, fmt.Errorf("%q is not a JSON value", s)
			}
			return x, nil
		}
		return v, nil
	}
	return nil, fmt.Errorf("%v is not a %s", jsonText(v), typeWord(t))
}

func typeWord(t reflect.Type) string {
	if t.Kind() == reflect.Bool {
		return "boolean"
	}
	return t.String()
}

func asString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	}
	return "", fmt.Errorf("%s is not a string", jsonText(v))
}

func asNumber(v any) (float64, error) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	case float64:
		return x, nil
	default:
		return 0, fmt.Errorf("%s is not a number", jsonText(v))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return f, nil
}

func parseTimeOfDay(s string) error {
	for _, layout := range []string{"15:04:05.999999999", "15:04:05", "15:04", "15:04:05Z07:00"} {
		if _, err := time.Parse(layout, s); err == nil {
			return nil
		}
	}
	return fmt.Errorf("bad time")
}
