package jsonscan

import (
	"unicode/utf16"
	"unicode/utf8"
)

// String returns the Go string of raw, a JSON string value with its quotes
// and nothing around them; ok is false if raw is anything else. Unescaping
// matches json.Unmarshal into a string: invalid surrogate escapes and
// invalid UTF-8 become U+FFFD. A string without escapes costs exactly one
// allocation, the string itself; so does an escaped one whose unescaped
// form fits in 256 bytes.
func String(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	end, flags, ctx := scanString(raw, 0)
	if ctx != "" || end != len(raw) {
		return "", false
	}
	body := raw[1 : end-1]
	if !needsUnquote(body, flags) {
		return string(body), true
	}
	var buf [256]byte
	return string(appendUnquoted(buf[:0], body)), true
}

// needsUnquote reports whether the contents of a scanned string differ from
// what json.Unmarshal would produce: they do if they hold an escape or
// invalid UTF-8 (which encoding/json coerces to U+FFFD).
func needsUnquote(body []byte, flags uint8) bool {
	return flags&flagEscape != 0 || flags&flagNonASCII != 0 && !utf8.Valid(body)
}

// appendUnquoted appends the unescaped form of body, the contents of a
// string scanString accepted, to dst. It mirrors encoding/json's
// unquoteBytes rune for rune; body being valid lets it skip the checks.
func appendUnquoted(dst, body []byte) []byte {
	for i := 0; i < len(body); {
		c := body[i]
		if c == '\\' {
			switch e := body[i+1]; e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(body[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(r) {
					// A high surrogate pairs with an immediately following
					// \u low surrogate; anything else is U+FFFD and the
					// next escape stands on its own.
					r2 := rune(-1)
					if i+1 < len(body) && body[i] == '\\' && body[i+1] == 'u' {
						r2 = hex4(body[i+2 : i+6])
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
			i += 2
			continue
		}
		if c < utf8.RuneSelf {
			j := i + 1
			for j < len(body) && body[j] < utf8.RuneSelf && body[j] != '\\' {
				j++
			}
			dst = append(dst, body[i:j]...)
			i = j
			continue
		}
		r, size := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, body[i:i+size]...)
		}
		i += size
	}
	return dst
}

// hex4 decodes four hex digits scanString has already checked.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
