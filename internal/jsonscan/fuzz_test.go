package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func addSeeds(f *testing.F) {
	for _, tc := range validityCases {
		if len(tc.in) <= maxFuzzLen {
			f.Add([]byte(tc.in))
		}
	}
	for _, s := range []string{
		envelope,
		`{"a":1,"b":2,"a":3}`,
		`{"a\u0062":1,"\ud83d\ude00":2,"\ud83d":3,"\ude00\ud83d":4,"\ud83d\u0041":5}`,
		"{\"\xff\":1,\"\xed\xa0\x80\":2,\"\u00e9\":3}",
		`{"":{"":[{"":""}]}}`,
		`{"k":"0123456789abcdef\"0123456789abcdef\\0123456789\u00e9"}`,
		`{"A":1,"a":2}`,
		` {"x" : [ 1 , { "y" : null } ] } `,
		`{"n":-0.0e-0,"m":1E+9,"o":123456789012345678901234567890}`,
		`["not","an","object"]`,
		`"\ud83d\ude00"`,
		`{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"text","text":"hi\n"}],"isError":false}}`,
	} {
		f.Add([]byte(s))
	}
}

// maxFuzzLen keeps the fuzzer on inputs it can explore. Left alone it
// grows inputs to kilobytes (long runs of "[" reach the coverage of nesting
// past 64 levels), and minimizing each new one costs time quadratic in its
// length: with the default -fuzzminimizetime of 60s, runs sat at 0 execs/sec
// for most of a minute. Every grammar path fits in 512 bytes; TestValid and
// TestNestingShapes cover deep nesting instead.
const maxFuzzLen = 512

// FuzzValid holds Valid, String and KindOf to encoding/json.
func FuzzValid(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzLen {
			t.Skip()
		}
		valid := json.Valid(data)
		if got := Valid(data); got != valid {
			t.Fatalf("Valid(%q) = %v, json.Valid = %v", data, got, valid)
		}

		// String takes a string with nothing around it; a valid document
		// that starts and ends with a quote is exactly that.
		isString := valid && len(data) >= 2 && data[0] == '"' && data[len(data)-1] == '"'
		s, ok := String(data)
		if ok != isString {
			t.Fatalf("String(%q) ok = %v, want %v", data, ok, isString)
		}
		if ok {
			var want string
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatalf("json.Unmarshal(%q): %v", data, err)
			}
			if s != want {
				t.Fatalf("String(%q) = %q, json.Unmarshal = %q", data, s, want)
			}
		}

		if valid && len(data) > 0 {
			// UseNumber: 1E700 is a valid number that float64 cannot hold.
			var v any
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("json.Unmarshal(%q): %v", data, err)
			}
			// KindOf looks at the first byte only, so leading whitespace
			// makes any document KindInvalid.
			trimmed := bytes.TrimLeft(data, " \t\r\n")
			if got, want := KindOf(trimmed), kindOfValue(v); got != want {
				t.Fatalf("KindOf(%q) = %d, want %d", trimmed, got, want)
			}
			if len(trimmed) < len(data) && KindOf(data) != KindInvalid {
				t.Fatalf("KindOf(%q) = %d, want KindInvalid", data, KindOf(data))
			}
		}
	})
}

func kindOfValue(v any) Kind {
	switch v := v.(type) {
	case map[string]any:
		return KindObject
	case []any:
		return KindArray
	case string:
		return KindString
	case json.Number:
		return KindNumber
	case bool:
		if v {
			return KindTrue
		}
		return KindFalse
	case nil:
		return KindNull
	}
	return KindInvalid
}

// FuzzObject holds Object to encoding/json: it must succeed exactly on valid
// documents whose top-level value is an object, and then report the members a
// json.Decoder token walk sees, duplicates included, with the same keys and
// raw values. The map decode double-checks the last value per key.
func FuzzObject(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzLen {
			t.Skip()
		}
		type member struct{ key, value string }
		var got []member
		err := Object(data, func(key, value []byte) error {
			got = append(got, member{string(key), string(value)})
			return nil
		})

		isObject := json.Valid(data) && bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{"))
		if (err == nil) != isObject {
			t.Fatalf("Object(%q) = %v, want success %v", data, err, isObject)
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Object(%q) error %T is not a *SyntaxError", data, err)
			}
			if se.Offset < 0 || se.Offset > int64(len(data)) {
				t.Fatalf("Object(%q) offset %d out of range", data, se.Offset)
			}
			return
		}

		var want []member
		dec := json.NewDecoder(bytes.NewReader(data))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("decoder on %q: first token %v, %v", data, tok, err)
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatalf("decoder on %q: key: %v", data, err)
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatalf("decoder on %q: value: %v", data, err)
			}
			want = append(want, member{tok.(string), string(raw)})
		}
		if len(got) != len(want) {
			t.Fatalf("Object(%q) reported %d members, decoder %d: %q vs %q", data, len(got), len(want), got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("Object(%q) member %d = %q, decoder %q", data, i, got[i], want[i])
			}
		}

		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("json.Unmarshal(%q): %v", data, err)
		}
		last := map[string]string{}
		for _, mb := range got {
			last[mb.key] = mb.value
		}
		if len(last) != len(m) {
			t.Fatalf("Object(%q): %d distinct keys, map has %d", data, len(last), len(m))
		}
		for k, v := range m {
			if last[k] != string(v) {
				t.Fatalf("Object(%q): last %q = %q, map has %q", data, k, last[k], v)
			}
		}

		for _, mb := range got {
			v := []byte(mb.value)
			if !Valid(v) || KindOf(v) == KindInvalid {
				t.Fatalf("Object(%q): member value %q not a valid value", data, v)
			}
			if KindOf(v) == KindString {
				var want string
				if err := json.Unmarshal(v, &want); err != nil {
					t.Fatal(err)
				}
				if s, ok := String(v); !ok || s != want {
					t.Fatalf("String(%q) = %q, %v; json.Unmarshal = %q", v, s, ok, want)
				}
			}
		}
	})
}
