package decodeerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
)

// JSON describes an error of decoding data (a whole JSON document) in
// words: a syntax error with its line and column, a type mismatch as "must
// be X, got Y" (prefixed by the field's path when there is one), an
// unknown field by its name.
func JSON(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset counts the offending byte; the column is that byte's.
		line, col := LineCol(data, max(se.Offset-1, 0))
		return fmt.Sprintf("JSON syntax error at line %d, column %d: %s", line, col, se.Error())
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		line, col := LineCol(data, int64(len(data)))
		return fmt.Sprintf("JSON syntax error at line %d, column %d: the JSON ends early", line, col)
	case errors.As(err, &te) && te.Type != nil:
		msg := fmt.Sprintf("must be %s, got %s", KindWords(te.Type), ValueWords(te.Value))
		if te.Field != "" {
			msg = te.Field + ": " + msg
		}
		if te.Offset > 0 && len(data) > 0 {
			line, col := LineCol(data, te.Offset)
			msg = fmt.Sprintf("line %d, column %d: %s", line, col, msg)
		}
		return msg
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "unknown field " + name
	}
	return Words(msg)
}

// TOML describes a go-toml decode error in words (its position is the
// caller's to add: go-toml's DecodeError carries it).
func TOML(err error) string { return Words(err.Error()) }

// LineCol turns a byte offset into a 1-based line and column.
func LineCol(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col = 1, 1
	for _, c := range data[:max(off, 0)] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

var (
	jsonTypePhrase = regexp.MustCompile(`json: cannot unmarshal (.+?) into Go (?:struct field (\S+) of type|value of type) (\S+)`)
	tomlTypePhrase = regexp.MustCompile(`toml: cannot (?:decode|store) TOML (\S+) into (?:(?:struct field|a Go value of type) )?(\S+)(?: of type (\S+))?`)
)

// Words rewrites the Go type phrases of encoding/json and go-toml
// messages into JSON and TOML words.
func Words(msg string) string {
	msg = jsonTypePhrase.ReplaceAllStringFunc(msg, func(m string) string {
		sub := jsonTypePhrase.FindStringSubmatch(m)
		field := ""
		if sub[2] != "" {
			field = fieldPath(sub[2]) + ": "
		}
		return fmt.Sprintf("%smust be %s, got %s", field, GoTypeWords(sub[3]), ValueWords(sub[1]))
	})
	return tomlTypePhrase.ReplaceAllStringFunc(msg, func(m string) string {
		sub := tomlTypePhrase.FindStringSubmatch(m)
		want := sub[2]
		if sub[3] != "" {
			want = sub[3]
		}
		return fmt.Sprintf("must be %s, got a TOML %s", tomlWords(want), sub[1])
	})
}

// fieldPath keeps the JSON part of encoding/json's struct field path:
// "Step.sandbox_name" → "sandbox_name", ".task_id" → "task_id" (a package
// or type name starts the path; JSON names follow).
func fieldPath(p string) string {
	segs := strings.Split(strings.TrimPrefix(p, "."), ".")
	for len(segs) > 1 && (isUpper(segs[0]) || isUpper(segs[1])) {
		segs = segs[1:]
	}
	return strings.Join(segs, ".")
}

func isUpper(s string) bool { return s != "" && s[0] >= 'A' && s[0] <= 'Z' }

// ValueWords turns encoding/json's UnmarshalTypeError.Value ("string",
// "number -1", "array") into words.
func ValueWords(v string) string {
	switch {
	case v == "string":
		return "a string"
	case v == "bool":
		return "a boolean"
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "number":
		return "a number"
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	}
	return v
}

// GoTypeWords names what a Go type accepts in JSON terms, from its
// printed name ("[]string", "map[string]any", "*int", "loadartifact.ArtifactRef").
func GoTypeWords(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "an object"
	case t == "string":
		return "a string"
	case t == "bool":
		return "a boolean"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"), t == "json.Number":
		return "a number"
	}
	return "an object"
}

// tomlWords is GoTypeWords in TOML's words.
func tomlWords(t string) string {
	switch w := GoTypeWords(t); w {
	case "a list":
		return "an array"
	case "an object":
		return "a table"
	default:
		return w
	}
}

// KindWords names what a Go type accepts in JSON terms.
func KindWords(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}
