package jsonvalue

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Text is a predicate's regex subject: a string as is, anything else as
// Dumps renders it (the reference matches against json.dumps output, so
// `{"a": 1}` with spaces, and "<" not escaped).
func Text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return Dumps(v)
}

// Dumps renders v like Python's json.dumps with default settings
// (", " and ": " separators, non-ASCII escaped), which the reference uses to
// stringify embedded placeholders and regex subjects. Object keys are
// sorted: generic values do not keep document order.
func Dumps(v any) string {
	var sb strings.Builder
	dumpsTo(&sb, v)
	return sb.String()
}

func dumpsTo(sb *strings.Builder, v any) {
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
			dumpsTo(sb, e)
		}
		sb.WriteByte(']')
	case map[string]any:
		sb.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				sb.WriteString(", ")
			}
			dumpsTo(sb, k)
			sb.WriteString(": ")
			dumpsTo(sb, x[k])
		}
		sb.WriteByte('}')
	default:
		// Not a generic JSON value: its encoding/json form, unescaped
		// like the rest.
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if enc.Encode(x) != nil {
			sb.WriteString("null")
			return
		}
		sb.WriteString(strings.TrimSuffix(buf.String(), "\n"))
	}
}
