package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func nest(open, close string, n int, inner string) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

// validityCases holds documents and whether json.Valid accepts them; every
// case is also checked against json.Valid itself, so a wrong expectation
// here fails rather than quietly agreeing with a wrong scanner.
var validityCases = []struct {
	in   string
	want bool
}{
	// Empty and whitespace only.
	{"", false},
	{" ", false},
	{"\t\n\r ", false},

	// Scalars.
	{"0", true},
	{"-0", true},
	{"1", true},
	{"-1", true},
	{"123", true},
	{"1.5", true},
	{"-1.5e10", true},
	{"1E+2", true},
	{"1e-2", true},
	{"0.0", true},
	{"0e0", true},
	{"01", false},
	{"-01", false},
	{"00", false},
	{"-", false},
	{"+1", false},
	{"1.", false},
	{".5", false},
	{"1e", false},
	{"1e+", false},
	{"1E-", false},
	{"1.e5", false},
	{"1.5e", false},
	{"0x10", false},
	{"1_000", false},
	{"NaN", false},
	{"Infinity", false},
	{"-Infinity", false},
	{"true", true},
	{"false", true},
	{"null", true},
	{"tru", false},
	{"truex", false},
	{"True", false},
	{"nul", false},
	{"nulll", false},
	{"fals", false},
	{"falsetrue", false},

	// Strings.
	{`""`, true},
	{`"abc"`, true},
	{`"`, false},
	{`"abc`, false},
	{`'abc'`, false},
	{`"\"\\\/\b\f\n\r\t"`, true},
	{`"\u0041\u00e9\uD83D\uDE00"`, true},
	{`"\ud800"`, true}, // lone surrogates are valid JSON text
	{`"\u00"`, false},
	{`"\u00g0"`, false},
	{`"\u123g"`, false},
	{`"\u123G0"`, false},
	{`"\uABCDef"`, true},
	{`"\u"`, false},
	{`"\x41"`, false},
	{`"\'"`, false},
	{`"\a"`, false},
	{`"\`, false},
	{`"\u12`, false},
	{"\"a\x00b\"", false},
	{"\"a\nb\"", false},
	{"\"a\tb\"", false},
	{"\"a\x1fb\"", false},
	{"\"a\x7fb\"", true},
	{"\"\xff\xfe\"", true},     // invalid UTF-8 is accepted
	{"\"\xed\xa0\x80\"", true}, // UTF-8-encoded surrogate, too
	{"\"h\u00e9llo w\u00f6rld, this is longer than eight bytes\"", true},
	{"\"0123456789abcdef0123456789\\\"0123456789\"", true},
	{"\"0123456789abcdef\x01456789\"", false},

	// Arrays and objects.
	{"[]", true},
	{"{}", true},
	{"[1,2,3]", true},
	{`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, true},
	{"[1,]", false},
	{"[,1]", false},
	{"[,]", false},
	{"[1 2]", false},
	{`{"a":1,}`, false},
	{`{,"a":1}`, false},
	{`{"a"}`, false},
	{`{"a":}`, false},
	{`{"a" 1}`, false},
	{`{a:1}`, false},
	{`{1:1}`, false},
	{`{"a":1 "b":2}`, false},
	{`{"a":1]`, false},
	{`[1}`, false},
	{"[", false},
	{"{", false},
	{"]", false},
	{"}", false},
	{`{"a":1`, false},
	{`{"a":[1,2}`, false},
	{`[[[]]`, false},
	{`[[]]]`, false},
	{`{"a":{"b":{}}}`, true},
	{`{"":0}`, true},
	{`{"a":1,"a":2}`, true},
	// Siblings of different kinds at one level: the open-container record
	// must forget the previous sibling.
	{`[{},[1,2]]`, true},
	{`[{"a":1},[1,2],{"b":[]}]`, true},
	{`{"a":{},"b":[1,2]}`, true},
	{`{"a":[],"b":{"c":1}}`, true},
	{`[[],{"a":1}]`, true},
	{`[[],{1}]`, false},
	{`[{},["a":1]]`, false},

	// Trailing garbage and multiple values.
	{"{} x", false},
	{"{}{}", false},
	{"{} {}", false},
	{"1 2", false},
	{`"a""b"`, false},
	{"[]]", false},
	{"{}\x00", false},
	{"\x00{}", false},
	{"1,", false},

	// Whitespace: only space, tab, LF and CR.
	{" \t\n\r{} \t\n\r", true},
	{"[ 1 , 2 ]", true},
	{"{ \"a\" : 1 , \"b\" : 2 }", true},
	{"\v{}", false},
	{"{}\v", false},
	{"\f{}", false},
	{"[1,\f2]", false},
	{"\u00a0{}", false},
	{"{}\u00a0", false},
	{"\ufeff{}", false}, // BOM
	{"{\u00a0}", false},
	{"\u2028{}", false},

	// Nesting: 10000 levels is encoding/json's limit.
	{nest("[", "]", 10000, ""), true},
	{nest("[", "]", 10001, ""), false},
	{nest(`{"a":`, "}", 10000, "1"), true},
	{nest(`{"a":`, "}", 10001, "1"), false},
	{nest("[", "]", 64, ""), true},
	{nest("[", "]", 65, ""), true},
	{nest("[", "]", 129, "1"), true},
	{nest("[", "]", 65, "") + "]", false},
	{strings.Repeat("[", 100) + strings.Repeat("]", 99), false},
	{strings.Repeat("[", 64) + "{" + strings.Repeat("]", 65), false},
	{strings.Repeat("[", 100000), false},
}

func TestValid(t *testing.T) {
	for _, tc := range validityCases {
		name := tc.in
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		if std := json.Valid([]byte(tc.in)); std != tc.want {
			t.Fatalf("test table wrong for %q: json.Valid = %v", name, std)
		}
		if got := Valid([]byte(tc.in)); got != tc.want {
			t.Errorf("Valid(%q) = %v, want %v", name, got, tc.want)
		}
		wantObj := tc.want && bytes.HasPrefix(bytes.TrimLeft([]byte(tc.in), " \t\r\n"), []byte("{"))
		err := Object([]byte(tc.in), func(key, value []byte) error { return nil })
		if (err == nil) != wantObj {
			t.Errorf("Object(%q) = %v, want error: %v", name, err, !wantObj)
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("Object(%q) error %T is not a *SyntaxError", name, err)
			} else if se.Offset < 0 || se.Offset > int64(len(tc.in)) {
				t.Errorf("Object(%q) offset %d out of range", name, se.Offset)
			}
		}
	}
}

// TestNestingShapes mixes objects and arrays at random across the 64-level
// frames scanContainer works in, then breaks one closer: every break must be
// noticed whatever level it sits at.
func TestNestingShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, depth := range []int{1, 2, 63, 64, 65, 127, 128, 129, 200, 1000, 9999, 10000} {
		var open, closeBy strings.Builder
		closers := make([]byte, depth)
		for d := range depth {
			if rng.IntN(2) == 0 {
				open.WriteString(`{"k":`)
				closers[depth-1-d] = '}'
			} else {
				open.WriteString("[0,")
				closers[depth-1-d] = ']'
			}
		}
		closeBy.Write(closers)
		doc := open.String() + "1" + closeBy.String()
		if !json.Valid([]byte(doc)) || !Valid([]byte(doc)) {
			t.Fatalf("depth %d: valid document rejected (json.Valid %v)", depth, json.Valid([]byte(doc)))
		}
		for _, k := range []int{0, depth / 2, depth - 1, rng.IntN(depth)} {
			bad := []byte(doc)
			p := len(open.String()) + 1 + k
			if bad[p] == '}' {
				bad[p] = ']'
			} else {
				bad[p] = '}'
			}
			if json.Valid(bad) {
				t.Fatalf("depth %d: broken closer %d still valid to json.Valid", depth, k)
			}
			if Valid(bad) {
				t.Errorf("depth %d: Valid accepted a mismatched closer at %d", depth, k)
			}
		}
	}
}

func TestSyntaxErrorOffsets(t *testing.T) {
	for _, tc := range []struct {
		in   string
		off  int64
		msg  string
		full string
	}{
		{in: "", off: 0, msg: "unexpected end of JSON input"},
		{in: `{"a":1`, off: 6, msg: "unexpected end of JSON input"},
		{in: `{"a":1,}`, off: 7, msg: "invalid character '}' looking for beginning of object key string"},
		{in: `{"a" 1}`, off: 5, msg: "invalid character '1' after object key"},
		{in: `{"a":01}`, off: 6, msg: "invalid character '1' after object key:value pair"},
		{in: `{"a":[1,]}`, off: 8, msg: "invalid character ']' looking for beginning of value"},
		{in: `{} x`, off: 3, msg: "invalid character 'x' after top-level value"},
		{in: `[1]`, off: 0, msg: "invalid character '[' looking for beginning of object"},
		{in: `{"a":"\q"}`, off: 7, msg: "invalid character 'q' in string escape code"},
		{in: `{"a":"\u12x4"}`, off: 10, msg: `invalid character 'x' in \u hexadecimal character escape`},
		{in: "{\"a\":\"\x01\"}", off: 6, msg: `invalid character '\x01' in string literal`},
		{in: `{"a":tru}`, off: 8, msg: "invalid character '}' in literal true"},
		{in: `{"a":1.x}`, off: 7, msg: "invalid character 'x' in numeric literal"},
		{in: `{"a":` + nest("[", "]", 10000, "") + `}`, off: 5 + 9999, msg: "exceeded max depth",
			full: "jsonscan: exceeded max depth at offset 10004"},
	} {
		err := Object([]byte(tc.in), func(key, value []byte) error { return nil })
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Object(%.30q) = %v, want a *SyntaxError", tc.in, err)
			continue
		}
		if se.Offset != tc.off || se.Msg != tc.msg {
			t.Errorf("Object(%.30q) = {%d, %q}, want {%d, %q}", tc.in, se.Offset, se.Msg, tc.off, tc.msg)
		}
		if tc.full != "" && se.Error() != tc.full {
			t.Errorf("Error() = %q, want %q", se.Error(), tc.full)
		}
	}
}

type member struct{ key, value string }

func members(t *testing.T, doc string) []member {
	t.Helper()
	var got []member
	if err := Object([]byte(doc), func(key, value []byte) error {
		got = append(got, member{string(key), string(value)})
		return nil
	}); err != nil {
		t.Fatalf("Object(%q): %v", doc, err)
	}
	return got
}

func TestObjectMembers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []member
	}{
		{`{}`, nil},
		{" { } ", nil},
		{`{"a":1}`, []member{{"a", "1"}}},
		{" {\n\t\"a\" :\r 1 ,\"b\":  [ 1 , 2 ]  \n}\n", []member{{"a", "1"}, {"b", "[ 1 , 2 ]"}}},
		{`{"s":"x\"y","o":{"p":{}},"t":true,"f":false,"n":null,"num":-1.5e3}`, []member{
			{"s", `"x\"y"`}, {"o", `{"p":{}}`}, {"t", "true"}, {"f", "false"}, {"n", "null"}, {"num", "-1.5e3"},
		}},
		// Duplicates: both, in order, unlike a map.
		{`{"a":1,"b":2,"a":3}`, []member{{"a", "1"}, {"b", "2"}, {"a", "3"}}},
		// Escaped keys are unescaped; one that aliases and one that does not in a row.
		{`{"a\u0062":1,"c":2,"\n\"\\\/\b\f\r\t":3,"\ud83d\ude00":4,"\ud83d":5,"":6}`, []member{
			{"ab", "1"}, {"c", "2"}, {"\n\"\\/\b\f\r\t", "3"}, {"\U0001F600", "4"}, {"\uFFFD", "5"}, {"", "6"},
		}},
		{"{\"\xff\":1,\"\u00e9\":2}", []member{{"\uFFFD", "1"}, {"\u00e9", "2"}}},
	} {
		got := members(t, tc.in)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Object(%q) members = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestObjectCallbackError(t *testing.T) {
	stop := errors.New("stop")
	var seen []string
	err := Object([]byte(`{"a":1,"b":2,"c":3}`), func(key, value []byte) error {
		seen = append(seen, string(key))
		if string(key) == "b" {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Errorf("err = %v, want the callback's error as is", err)
	}
	if fmt.Sprint(seen) != "[a b]" {
		t.Errorf("callback saw %v, want [a b]", seen)
	}
}

// TestObjectLateSyntaxError pins the documented contract: members before a
// syntax error are reported, and the error still comes back.
func TestObjectLateSyntaxError(t *testing.T) {
	var seen []string
	err := Object([]byte(`{"a":1,"b":2,}`), func(key, value []byte) error {
		seen = append(seen, string(key))
		return nil
	})
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *SyntaxError", err)
	}
	if fmt.Sprint(seen) != "[a b]" {
		t.Errorf("callback saw %v, want [a b]", seen)
	}
	// A bad value is caught before its member is reported.
	seen = nil
	Object([]byte(`{"a":1,"b":[1,}`), func(key, value []byte) error {
		seen = append(seen, string(key))
		return nil
	})
	if fmt.Sprint(seen) != "[a]" {
		t.Errorf("callback saw %v, want [a]", seen)
	}
}

func TestObjectSlicesAliasAndAreClipped(t *testing.T) {
	data := []byte(`{"plain":"v","esc\u0041":"w"}`)
	orig := string(data)
	var keys [][]byte
	Object(data, func(key, value []byte) error {
		if string(key) == "plain" {
			if &key[0] != &data[2] {
				t.Errorf("unescaped key does not alias data")
			}
			keys = append(keys, key)
		}
		if &value[0] != &data[bytes.Index(data, value)] {
			t.Errorf("value %q does not alias data", value)
		}
		if cap(key) != len(key) || cap(value) != len(value) {
			t.Errorf("key %q or value %q not clipped", key, value)
		}
		_ = append(key, "XXXX"...)
		_ = append(value, "XXXX"...)
		return nil
	})
	if string(data) != orig {
		t.Errorf("appending to key or value changed data: %q", data)
	}
}

func TestUnescapeMatchesEncodingJSON(t *testing.T) {
	for _, lit := range []string{
		`""`, `"plain"`, `"\u0000"`, `"\u001f"`, `"\u00e9"`, `"\u20AC"`,
		`"\ud83d\ude00"`, `"\uD83D\uDE00"`, `"\ud83d"`, `"\ude00"`, `"\ude00\ud83d"`,
		`"\ud83d\u0041"`, `"\ud83dx"`, `"\ud83d\ud83d\ude00"`, `"\ud83d\\ude00"`,
		`"\ud800\udc00"`, `"\udbff\udfff"`, `"\uDBFF"`, `"\uFFFD"`, `"\uFFFF"`, `"a\ud83d"`,
		`"\"\\\/\b\f\n\r\t"`, `"tab\there"`,
		"\"\xff\"", "\"\xed\xa0\x80\"", "\"\xc3\"", "\"\xc3\xa9\"", "\"\xef\xbf\xbd\"", "\"\xf4\x90\x80\x80\"",
		"\"\xe2\x82\"", "\"a\xffb\\n\xfe\"", "\"\x7f\"",
		`"` + strings.Repeat(`\u00e9`, 100) + `"`, // unescaped output beyond the stack buffer
		`"` + strings.Repeat("\xff", 300) + `\n"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatalf("json.Unmarshal(%q): %v", lit, err)
		}
		got, ok := String([]byte(lit))
		if !ok || got != want {
			t.Errorf("String(%q) = %q, %v; want %q", lit, got, ok, want)
		}
		m := members(t, "{"+lit+":0}")
		if len(m) != 1 || m[0].key != want {
			t.Errorf("Object key %q = %q, want %q", lit, m, want)
		}
	}
}

func TestStringRejects(t *testing.T) {
	for _, raw := range []string{
		``, `"`, `a`, `"a`, `a"`, ` "a"`, `"a" `, `"a""b"`, `"a"b`, `"\q"`, `"\u12"`, "\"\x01\"", `1`, `null`, `["a"]`,
	} {
		if s, ok := String([]byte(raw)); ok {
			t.Errorf("String(%q) = %q, true; want ok=false", raw, s)
		}
	}
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want Kind
	}{
		{`{}`, KindObject}, {`[]`, KindArray}, {`""`, KindString}, {`"x"`, KindString},
		{`0`, KindNumber}, {`-1`, KindNumber}, {`9.5`, KindNumber},
		{`true`, KindTrue}, {`false`, KindFalse}, {`null`, KindNull},
		{``, KindInvalid}, {` 1`, KindInvalid}, {`+1`, KindInvalid}, {`x`, KindInvalid}, {`}`, KindInvalid},
	} {
		if got := KindOf([]byte(tc.raw)); got != tc.want {
			t.Errorf("KindOf(%q) = %d, want %d", tc.raw, got, tc.want)
		}
	}
}

const envelope = `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"items_echo","arguments":{"msg":"hello"},"_meta":{"progressToken":7}}}`

func TestAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts need a full run")
	}
	data := []byte(envelope)
	var id, params []byte
	var n int
	if a := testing.AllocsPerRun(100, func() {
		n = 0
		if err := Object(data, func(key, value []byte) error {
			n++
			switch string(key) {
			case "id":
				id = value
			case "params":
				params = value
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Object: %v allocations per run, want 0", a)
	}
	if n != 4 || string(id) != "42" || !bytes.HasPrefix(params, []byte(`{"name"`)) {
		t.Errorf("Object saw n=%d id=%q params=%q", n, id, params)
	}

	deep := []byte(nest(`{"a":`, "}", 10000, `"x"`))
	for name, doc := range map[string][]byte{"envelope": data, "deep": deep, "invalid": []byte(`{"a":[1,}`)} {
		if a := testing.AllocsPerRun(20, func() { Valid(doc) }); a != 0 {
			t.Errorf("Valid(%s): %v allocations per run, want 0", name, a)
		}
	}
	if a := testing.AllocsPerRun(20, func() {
		if err := Object(deep, func(key, value []byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Object(deep): %v allocations per run, want 0", a)
	}

	for raw, want := range map[string]float64{`"tools/call"`: 1, `"tools\/call"`: 1, `""`: 0} {
		if a := testing.AllocsPerRun(100, func() { String([]byte(raw)) }); a != want {
			t.Errorf("String(%s): %v allocations per run, want %v", raw, a, want)
		}
	}
}

// TestSWARBoundaries moves a quote, backslash, control and non-ASCII byte
// through every position of a string longer than the eight-byte stride.
func TestSWARBoundaries(t *testing.T) {
	for n := range 40 {
		for p := range n {
			for _, c := range []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xff} {
				body := bytes.Repeat([]byte{'a'}, n)
				body[p] = c
				doc := append(append([]byte(`{"k":"`), body...), `"}`...)
				if got, want := Valid(doc), json.Valid(doc); got != want {
					t.Errorf("Valid(%q) = %v, json.Valid = %v", doc, got, want)
				}
				raw := append(append([]byte(`"`), body...), '"')
				var want string
				werr := json.Unmarshal(raw, &want)
				got, ok := String(raw)
				if ok != (werr == nil) || ok && got != want {
					t.Errorf("String(%q) = %q, %v; json.Unmarshal = %q, %v", raw, got, ok, want, werr)
				}
				if ok && !utf8.ValidString(got) {
					t.Errorf("String(%q) returned invalid UTF-8", raw)
				}
			}
		}
	}
}
