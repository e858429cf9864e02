package triggers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentenv/agentenv/internal/jsonvalue"
)

// Values flowing through the engine are generic JSON: map[string]any,
// []any, json.Number, string, bool and nil. Numbers stay json.Number so
// integers keep their precision and round-trip unchanged. They are decoded,
// compared and walked by internal/jsonvalue, whose predicate semantics the
// outcome verifier shares.

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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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

// validatePath refuses a path with an invalid segment, in the reference's
// words.
func validatePath(path, where string) error {
	if seg, bad := jsonvalue.BadSegment(path); bad {
		return specErrorf("%s: invalid path segment %s in %s", where, pyQuote(seg), pyQuote(path))
	}
	return nil
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
	if v, err := jsonvalue.Decode([]byte(text)); err == nil {
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
