package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode/utf8"
)

// The trajectory keeps a record of every call, not a copy of every byte: a
// tool call's arguments, its result and each payload field of other events
// are stored whole up to Config.TrajectoryMaxFieldBytes (64 KiB by
// default), and a larger value is replaced by a marker (gateway doc,
// "Trajectory"). Without the cap one 50 MB call wrote 157 MB of trajectory
// and held it in the writer's queue.

// truncatedKey names the marker member that says a value was cut.
const truncatedKey = "agentenv_truncated"

// markerOverhead is what a marker costs besides its head (member names,
// the size and the sha256); the head gets the rest of the budget.
const markerOverhead = 192

// capValue returns raw when it fits in max bytes (max <= 0: no cap), else
// the object {"agentenv_truncated":{...}}, which keeps an arguments value
// an object.
func capValue(raw []byte, max int) []byte {
	if max <= 0 || len(raw) <= max {
		return raw
	}
	b := make([]byte, 0, max)
	b = append(b, `{"`+truncatedKey+`":`...)
	b = appendTruncation(b, raw, max)
	return append(b, '}')
}

// capResult is capValue for a CallToolResult: the marker stays a valid
// result, {"content":[],"isError":<as the original>,"agentenv_truncated":{...}},
// so readers of content and isError keep working.
func capResult(raw []byte, max int) []byte {
	if max <= 0 || len(raw) <= max {
		return raw
	}
	b := make([]byte, 0, max)
	b = append(b, `{"content":[],"isError":`...)
	b = strconv.AppendBool(b, resultIsError(raw))
	b = append(b, `,"`+truncatedKey+`":`...)
	b = appendTruncation(b, raw, max)
	return append(b, '}')
}

// appendTruncation appends {"original_bytes":n,"sha256":"<hex>","head":"…"}:
// the value's size and digest, and the start of its JSON text as a string,
// cut at a character boundary so that the whole marker fits in max.
func appendTruncation(dst, raw []byte, max int) []byte {
	sum := sha256.Sum256(raw)
	dst = append(dst, `{"original_bytes":`...)
	dst = strconv.AppendInt(dst, int64(len(raw)), 10)
	dst = append(dst, `,"sha256":"`...)
	dst = hex.AppendEncode(dst, sum[:])
	dst = append(dst, `","head":`...)
	budget := max - markerOverhead
	head := []byte(`""`)
	for n := budget; n > 0; {
		cut := min(n, len(raw))
		for cut > 0 && cut < len(raw) && !utf8.RuneStart(raw[cut]) {
			cut--
		}
		// Escaping can grow the text (up to 6x for control bytes):
		// shrink in proportion until it fits.
		h := appendJSONString(nil, string(raw[:cut]))
		if len(h) <= budget {
			head = h
			break
		}
		n = min(cut-1, cut*budget/len(h))
	}
	dst = append(dst, head...)
	return append(dst, '}')
}
