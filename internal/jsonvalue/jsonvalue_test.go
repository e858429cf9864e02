package jsonvalue_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/agentenv/agentenv/internal/jsonvalue"
)

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatalf("Decode(%s): %v", s, err)
	}
	return v
}

func TestDecode(t *testing.T) {
	v := mustDecode(t, ` {"n": 12345678901234567890} `)
	if n := v.(map[string]any)["n"]; n != json.Number("12345678901234567890") {
		t.Errorf("number decoded as %#v", n)
	}
	if _, err := jsonvalue.Decode([]byte(`{} {}`)); !errors.Is(err, jsonvalue.ErrTrailingData) {
		t.Errorf("two values: %v", err)
	}
	if _, err := jsonvalue.Decode([]byte(`{`)); err == nil {
		t.Error("truncated object decoded")
	}
}

func TestEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{`1`, `1.0`, true},
		{`1e2`, `100`, true},
		{`1`, `2`, false},
		{`1`, `"1"`, false},
		{`null`, `null`, true},
		{`null`, `false`, false},
		{`[1,{"a":[true]}]`, `[1.0,{"a":[true]}]`, true},
		{`[1]`, `[1,1]`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
		{`{"a":1}`, `{"b":1}`, false},
	} {
		if got := jsonvalue.Equal(mustDecode(t, tc.a), mustDecode(t, tc.b)); got != tc.want {
			t.Errorf("Equal(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestNonEmpty(t *testing.T) {
	for s, want := range map[string]bool{`null`: false, `""`: false, `[]`: false, `{}`: true, `0`: true, `false`: true, `"x"`: true, `[null]`: true} {
		if got := jsonvalue.NonEmpty(mustDecode(t, s)); got != want {
			t.Errorf("NonEmpty(%s) = %v, want %v", s, got, want)
		}
	}
}

func TestLookupAndBadSegment(t *testing.T) {
	doc := mustDecode(t, `{"items":[{"id":"a","tags":["x","y"]},{"id":"b"}],"n":1}`)
	for path, want := range map[string]any{
		"items[1].id":      "b",
		"items[0].tags[1]": "y",
		"items[2].id":      nil,
		"items[*]":         doc.(map[string]any)["items"],
		"n.x":              nil,
		"missing":          nil,
		"items..id":        nil,
	} {
		if got := jsonvalue.Lookup(doc, path); !jsonvalue.Equal(got, want) {
			t.Errorf("Lookup(%s) = %v, want %v", path, got, want)
		}
	}
	if seg, bad := jsonvalue.BadSegment("a.b[0].c[*]"); bad {
		t.Errorf("valid path refused at %q", seg)
	}
	if seg, bad := jsonvalue.BadSegment("a.b-c.d"); !bad || seg != "b-c" {
		t.Errorf("BadSegment = %q, %v", seg, bad)
	}
}

func Example() {
	v, _ := jsonvalue.Decode([]byte(`{"inbox":[{"subject":"Report","unread":1.0}]}`))
	fmt.Println(jsonvalue.Lookup(v, "inbox[0].subject"))
	fmt.Println(jsonvalue.Equal(jsonvalue.Lookup(v, "inbox[0].unread"), json.Number("1")))
	fmt.Println(jsonvalue.NonEmpty(jsonvalue.Lookup(v, "inbox[1]")))
	// Output:
	// Report
	// true
	// false
}

func TestDumpsLikePython(t *testing.T) {
	for in, want := range map[string]string{
		`{"b":[1,true,null],"a":"x<y"}`: `{"a": "x<y", "b": [1, true, null]}`,
		`"é\n😀"`:                        `"\u00e9\n\ud83d\ude00"`,
		`[]`:                            `[]`,
		`1.50`:                          `1.50`,
	} {
		if got := jsonvalue.Dumps(mustDecode(t, in)); got != want {
			t.Errorf("Dumps(%s) = %s, want %s", in, got, want)
		}
	}
	if got := jsonvalue.Dumps(struct{ A string }{"<"}); got != `{"A":"<"}` {
		t.Errorf("Dumps(struct) = %s", got)
	}
	if got := jsonvalue.Text("plain"); got != "plain" {
		t.Errorf("Text(string) = %s", got)
	}
	if got := jsonvalue.Text(mustDecode(t, `{"a":1}`)); got != `{"a": 1}` {
		t.Errorf("Text(object) = %s", got)
	}
}

func TestInt(t *testing.T) {
	for _, c := range []struct {
		in   any
		want int
	}{{3, 3}, {int64(4), 4}, {float64(5), 5}, {json.Number("6"), 6}, {json.Number("6.5"), 0}, {"7", 0}, {nil, 0}} {
		if got := jsonvalue.Int(c.in); got != c.want {
			t.Errorf("Int(%#v) = %d; want %d", c.in, got, c.want)
		}
	}
}
