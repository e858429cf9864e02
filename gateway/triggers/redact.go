package triggers

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"unicode/utf8"
)

// Redaction of argument echoes in the trigger log and the trajectory:
// bodies and addresses are PII, so only identifier and
// metadata scalars pass, under allowlisted keys at any depth; everything else
// becomes a shape descriptor. Structure and key names are kept.

var echoKeys = map[string]bool{
	"action": true, "createdTime": true, "fileName": true, "kind": true, "mimeType": true,
	"modifiedTime": true, "name": true, "role": true, "title": true, "type": true,
}

var echoIDRe = regexp.MustCompile(`(?:^id|Id|_id)$`)

const echoValueMax = 200

func echoable(key string) bool { return echoKeys[key] || echoIDRe.MatchString(key) }

// echoArgs returns the redacted projection of v (key is the enclosing key).
func echoArgs(v any) any { return echoValue(v, "", false) }

func echoValue(v any, key string, hasKey bool) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = echoValue(e, k, true)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = echoValue(e, key, hasKey)
		}
		return out
	}
	if hasKey && echoable(key) {
		if s, ok := v.(string); ok && utf8.RuneCountInString(s) > echoValueMax {
			return shape(v)
		}
		return v
	}
	return shape(v)
}

func shape(v any) map[string]any {
	s := map[string]any{"type": pyType(v)}
	switch x := v.(type) {
	case string:
		s["len"] = utf8.RuneCountInString(x)
	case []any:
		s["len"] = len(x)
	case map[string]any:
		s["len"] = len(x)
	}
	return map[string]any{"redacted": s}
}

// digest is the first 16 hex of the SHA-256 of text.
func digest(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])[:16]
}
