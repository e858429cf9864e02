package triggers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Values flowing through the engine are generic JSON: map[string]any,
// []any, json.Number, string, bool and nil. Numbers stay json.Number so
// integers keep their precision and round-trip unchanged.

var errTrailingData = errors.New("trailing data after JSON value")

// decodeJSON decodes exactly one JSON value.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errTrailingData
	}
	return v, nil
}

// mustMarshal encodes a generic value (maps with sorted keys).
func mustMarshal(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage("null")
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// pyDumps renders v like Python's json.dumps with default settings
// (", " and ": " separators, non-ASCII escaped), which the reference uses to
// stringify embedded placeholders and regex subjects. Object keys are
// sorted: the engine does not keep document order inside values.
func pyDumps(v any) string {
	var sb strings.Builder
	pyDumpsTo(&sb, v)
	return sb.String()
}

func pyDumpsTo(sb *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		sb.WriteString("null")
	case bool:
		if x {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
	case json.Number:
		sb.WriteString(x.String())
	case string:
		sb.WriteByte('"')
		for _, r := range x {
			switch {
			case r == '"':
				sb.WriteString(`\"`)
			case r == '\\':
				sb.WriteString(`\\`)
			case r == '\n':
				sb.WriteString(`\n`)
			case r == '\r':
				sb.WriteString(`\r`)
			case r == '\t':
				sb.WriteString(`\t`)
			case r == '\b':
				sb.WriteString(`\b`)
			case r == '\f':
				sb.WriteString(`\f`)
			case r < 0x20 || (r >= 0x7f && r <= 0xffff):
				fmt.Fprintf(sb, `\u%04x`, r)
			case r > 0xffff:
				r -= 0x10000
				fmt.Fprintf(sb, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			default:
				sb.WriteRune(r)
			}
		}
		sb.WriteByte('"')
	case []any:
		sb.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				sb.WriteString(", ")
			}
			pyDumpsTo(sb, e)
		}
		sb.WriteByte(']')
	case map[string]any:
		sb.WriteByte('{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				sb.WriteString(", ")
			}
			pyDumpsTo(sb, k)
			sb.WriteString(": ")
			pyDumpsTo(sb, x[k])
		}
		sb.WriteByte('}')
	default:
		sb.WriteString(string(mustMarshal(x)))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// asText is a predicate subject: strings as is, anything else JSON-encoded.
func asText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return pyDumps(v)
}

// bindingText is the string form of a check binding in a whole-string
// placeholder. (The reference uses Python's str(); we use the JSON text for
// non-strings, which is what a tool argument can actually use.)
func bindingText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return string(mustMarshal(v))
}

// jsonEqual is deep equality with numbers compared by value (1 == 1.0).
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

// nonEmpty is the exists predicate's notion of presence.
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

// Paths: dot-separated segments, each a word with optional [n] indexes; a
// trailing [*] means the list itself.
var (
	segmentRe = regexp.MustCompile(`^(\w+)((?:\[(?:\d+|\*)\])*)$`)
	indexRe   = regexp.MustCompile(`\[(\d+|\*)\]`)
)

func validatePath(path, where string) error {
	for _, seg := range strings.Split(path, ".") {
		if !segmentRe.MatchString(seg) {
			return specErrorf("%s: invalid path segment %s in %s", where, pyQuote(seg), pyQuote(path))
		}
	}
	return nil
}

// applyPath walks data along path; a missing key or index yields nil.
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

// resultText joins the text contents of a CallToolResult with "\n".
func resultText(result json.RawMessage) string {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(result, &r) != nil {
		return ""
	}
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// resultData is a call's text content parsed as JSON, else the raw text, or
// nil when there is no text.
func resultData(result json.RawMessage) any {
	text := resultText(result)
	if text == "" {
		return nil
	}
	if v, err := decodeJSON([]byte(text)); err == nil {
		return v
	}
	return text
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

// pyQuote renders s like Python's repr() of a str, for messages.
func pyQuote(s string) string {
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

// pyType names a generic value's type like Python does.
func pyType(v any) string {
	switch x := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case string:
		return "str"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	case json.Number:
		if isIntNumber(x) {
			return "int"
		}
		return "float"
	}
	return fmt.Sprintf("%T", v)
}

func isIntNumber(n json.Number) bool {
	s := strings.TrimPrefix(n.String(), "-")
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
