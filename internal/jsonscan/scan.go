package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit: a document nested 10000 deep
// is valid, one nested 10001 deep is not.
const maxDepth = 10000

// A SyntaxError describes where and why a document is not valid JSON.
type SyntaxError struct {
	Offset int64  // index in data of the offending byte; len(data) when the input ends early
	Msg    string // what went wrong, worded like encoding/json's messages
}

func (e *SyntaxError) Error() string {
	return "jsonscan: " + e.Msg + " at offset " + strconv.FormatInt(e.Offset, 10)
}

// The scanning functions below report failure as (offset, context) instead
// of an error value so that Valid never allocates: only the exported entry
// points turn a failure into a *SyntaxError. An offset at or past the end of
// data means the input ended early, whatever the context.
const (
	ctxValue   = "looking for beginning of value"
	ctxObject  = "looking for beginning of object"
	ctxKey     = "looking for beginning of object key string"
	ctxColon   = "after object key"
	ctxMember  = "after object key:value pair"
	ctxElement = "after array element"
	ctxTop     = "after top-level value"
	ctxString  = "in string literal"
	ctxEscape  = "in string escape code"
	ctxHex     = `in \u hexadecimal character escape`
	ctxNumber  = "in numeric literal"
	ctxTrue    = "in literal true"
	ctxFalse   = "in literal false"
	ctxNull    = "in literal null"
	ctxDeep    = "exceeded max depth"
)

func syntaxError(data []byte, off int, ctx string) *SyntaxError {
	switch {
	case ctx == ctxDeep:
		return &SyntaxError{Offset: int64(off), Msg: ctxDeep}
	case off >= len(data):
		return &SyntaxError{Offset: int64(len(data)), Msg: "unexpected end of JSON input"}
	}
	return &SyntaxError{Offset: int64(off), Msg: "invalid character " + quoteChar(data[off]) + " " + ctx}
}

// quoteChar formats c the way encoding/json's messages do.
func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

// Object scans data, which must be exactly one JSON object with optional
// surrounding whitespace (RFC 8259, exactly what json.Valid accepts), and
// calls fn for each top-level member in order, duplicates included, with the
// member's key and its raw value.
//
// The key is unescaped exactly as json.Unmarshal into a string would
// (invalid surrogates and invalid UTF-8 become U+FFFD). When the key needs
// no unescaping it aliases data; otherwise it lives in a scratch buffer that
// is reused for the next member, so it is valid only during the call. That
// buffer is Object's only allocation, once per call and only if some key
// needs unescaping: a buffer on Object's stack would escape through fn. The
// value is the sub-slice of data holding the member's value, without
// surrounding whitespace. Both slices have their capacity clipped, so
// appending to them never overwrites data.
//
// Object validates the whole document, nested values included, before
// returning nil. fn may be called for members before a later syntax error is
// found, so callers must not act on members until Object returns nil. An
// error from fn stops the scan and is returned as is. Syntax errors, and a
// valid document whose top-level value is not an object, are reported as a
// *SyntaxError.
func Object(data []byte, fn func(key, value []byte) error) error {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return syntaxError(data, i, ctxObject)
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		i++
	} else {
		var scratch []byte
		for {
			if i >= len(data) || data[i] != '"' {
				return syntaxError(data, i, ctxKey)
			}
			ks := i
			end, flags, ctx := scanString(data, i)
			if ctx != "" {
				return syntaxError(data, end, ctx)
			}
			i = skipWS(data, end)
			if i >= len(data) || data[i] != ':' {
				return syntaxError(data, i, ctxColon)
			}
			vs := skipWS(data, i+1)
			i, ctx = scanValue(data, vs, 1)
			if ctx != "" {
				return syntaxError(data, i, ctx)
			}
			key := data[ks+1 : end-1 : end-1]
			if needsUnquote(key, flags) {
				scratch = appendUnquoted(scratch[:0], key)
				key = scratch[:len(scratch):len(scratch)]
			}
			if err := fn(key, data[vs:i:i]); err != nil {
				return err
			}
			i = skipWS(data, i)
			if i < len(data) && data[i] == ',' {
				i = skipWS(data, i+1)
				continue
			}
			if i < len(data) && data[i] == '}' {
				i++
				break
			}
			return syntaxError(data, i, ctxMember)
		}
	}
	if i = skipWS(data, i); i != len(data) {
		return syntaxError(data, i, ctxTop)
	}
	return nil
}

// Valid reports whether data is exactly one valid JSON value with optional
// surrounding whitespace. It gives the same answer as json.Valid.
func Valid(data []byte) bool {
	i, ctx := scanValue(data, skipWS(data, 0), 0)
	return ctx == "" && skipWS(data, i) == len(data)
}

// A Kind is the type of a JSON value.
type Kind uint8

const (
	KindInvalid Kind = iota
	KindObject
	KindArray
	KindString
	KindNumber
	KindTrue
	KindFalse
	KindNull
)

// KindOf returns the kind of the raw value by its first byte alone; it does
// not validate raw, which is meant to be a value Object has already checked.
// Empty input and anything that cannot start a JSON value (including
// whitespace) are KindInvalid.
func KindOf(raw []byte) Kind {
	if len(raw) == 0 {
		return KindInvalid
	}
	switch c := raw[0]; c {
	case '{':
		return KindObject
	case '[':
		return KindArray
	case '"':
		return KindString
	case 't':
		return KindTrue
	case 'f':
		return KindFalse
	case 'n':
		return KindNull
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return KindNumber
		}
	}
	return KindInvalid
}

// skipWS skips JSON's four whitespace bytes, and only those: \v, \f, NBSP
// and a BOM are not whitespace to json.Valid.
func skipWS(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanValue scans the value starting at data[i], which sits inside depth
// open containers, and returns the index just past it.
func scanValue(data []byte, i, depth int) (int, string) {
	if i < len(data) && (data[i] == '{' || data[i] == '[') {
		return scanContainer(data, i, depth)
	}
	return scanScalar(data, i)
}

// scanScalar scans a string, number or literal starting at data[i].
func scanScalar(data []byte, i int) (int, string) {
	if i >= len(data) {
		return i, ctxValue
	}
	switch c := data[i]; c {
	case '"':
		end, _, ctx := scanString(data, i)
		return end, ctx
	case 't':
		return scanLiteral(data, i, "true", ctxTrue)
	case 'f':
		return scanLiteral(data, i, "false", ctxFalse)
	case 'n':
		return scanLiteral(data, i, "null", ctxNull)
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return scanNumber(data, i)
		}
	}
	return i, ctxValue
}

// scanContainer scans the object or array starting at data[i], which sits
// inside depth open containers. It is iterative: which containers are open
// is kept as one bit each (object or array) in a uint64, and only every 64th
// level recurses, so the full 10000 levels cost about 160 small stack
// frames and nothing on the heap.
func scanContainer(data []byte, i, depth int) (int, string) {
	var (
		objs uint64 // bit k set: the k-th container open in this frame is an object
		n    int    // containers open in this frame
		ctx  string
	)
open: // data[i] is '{' or '['
	if depth+n >= maxDepth {
		return i, ctxDeep
	}
	if data[i] == '{' {
		objs |= 1 << n
		n++
		i = skipWS(data, i+1)
		if i < len(data) && data[i] == '}' {
			goto closed
		}
		goto key
	}
	objs &^= 1 << n
	n++
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == ']' {
		goto closed
	}
	goto value

key:
	if i >= len(data) || data[i] != '"' {
		return i, ctxKey
	}
	if i, _, ctx = scanString(data, i); ctx != "" {
		return i, ctx
	}
	i = skipWS(data, i)
	if i >= len(data) || data[i] != ':' {
		return i, ctxColon
	}
	i = skipWS(data, i+1)

value:
	if i < len(data) && (data[i] == '{' || data[i] == '[') {
		if n < 64 {
			goto open
		}
		i, ctx = scanContainer(data, i, depth+n)
	} else {
		i, ctx = scanScalar(data, i)
	}
	if ctx != "" {
		return i, ctx
	}

after:
	i = skipWS(data, i)
	if i >= len(data) {
		return i, ctxElement
	}
	if objs&(1<<(n-1)) != 0 {
		switch data[i] {
		case ',':
			i = skipWS(data, i+1)
			goto key
		case '}':
			goto closed
		}
		return i, ctxMember
	}
	switch data[i] {
	case ',':
		i = skipWS(data, i+1)
		goto value
	case ']':
		goto closed
	}
	return i, ctxElement

closed:
	i++
	n--
	if n > 0 {
		goto after
	}
	return i, ""
}

// String scan flags.
const (
	flagEscape   = 1 << iota // a backslash escape
	flagNonASCII             // a byte >= 0x80 (possibly set for neighbours of one)
)

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// scanString scans the string starting at data[i] == '"' and returns the
// index just past its closing quote, with flags saying whether the contents
// need unquoting.
func scanString(data []byte, i int) (int, uint8, string) {
	var flags uint8
	i++
	for {
		// Eight bytes at a time while none of them is a quote, a backslash
		// or a control character: long text in tool results is the common
		// case this pays for. Byte tests use the usual SWAR identities;
		// their only false positives sit above a true hit, so the lowest
		// flagged byte is always a real one.
		for i+8 <= len(data) {
			x := binary.LittleEndian.Uint64(data[i:])
			q := x ^ (lsb * '"')
			b := x ^ (lsb * '\\')
			m := ((x-lsb*0x20)&^x | (q-lsb)&^q | (b-lsb)&^b) & msb
			if x&msb != 0 {
				flags |= flagNonASCII
			}
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(data) {
			return i, flags, ctxString
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, flags, ""
		case c == '\\':
			flags |= flagEscape
			if i+1 >= len(data) {
				return i + 1, flags, ctxEscape
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if k >= len(data) || !isHex(data[k]) {
						return k, flags, ctxHex
					}
				}
				i += 6
			default:
				return i + 1, flags, ctxEscape
			}
		case c < 0x20:
			return i, flags, ctxString
		default:
			if c >= utf8.RuneSelf {
				flags |= flagNonASCII
			}
			i++
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at data[i].
func scanNumber(data []byte, i int) (int, string) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return i, ctxNumber
	case data[i] == '0':
		i++
	case '1' <= data[i] && data[i] <= '9':
		i = skipDigits(data, i+1)
	default:
		return i, ctxNumber
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || !isDigit(data[i]) {
			return i, ctxNumber
		}
		i = skipDigits(data, i+1)
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return i, ctxNumber
		}
		i = skipDigits(data, i+1)
	}
	return i, ""
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func skipDigits(data []byte, i int) int {
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	return i
}

// scanLiteral scans lit (true, false or null) at data[i]; ctx names it in
// the failure so that no message is built unless one is reported.
func scanLiteral(data []byte, i int, lit, ctx string) (int, string) {
	for k := 1; k < len(lit); k++ {
		if i+k >= len(data) || data[i+k] != lit[k] {
			return i + k, ctx
		}
	}
	return i + len(lit), ""
}
