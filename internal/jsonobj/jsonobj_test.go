package jsonobj_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentenv/agentenv/internal/jsonobj"
)

type header struct {
	ID   string `json:"id"`
	Note string `json:"note,omitempty"`
}

type doc struct {
	header
	Name   string        `json:"name"`
	Hidden string        `json:"-"`
	Extra  jsonobj.Extra `json:"-"`
}

func (d *doc) UnmarshalJSON(b []byte) error {
	type plain doc
	return jsonobj.Decode(b, (*plain)(d), &d.Extra)
}

func (d doc) MarshalJSON() ([]byte, error) {
	type plain doc
	return jsonobj.Encode(plain(d), d.Extra)
}

func TestRoundTripKeepsUnknownMembers(t *testing.T) {
	in := `{"id":"a","name":"n","future":{"x":[1,2.50,"y"]},"also":null,"Hidden":"h"}`
	var d doc
	if err := json.Unmarshal([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	if d.ID != "a" || d.Name != "n" {
		t.Fatalf("declared members not decoded: %+v", d)
	}
	if len(d.Extra) != 3 || string(d.Extra["future"]) != `{"x":[1,2.50,"y"]}` {
		t.Fatalf("extra = %v", d.Extra)
	}
	out, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"a","name":"n","Hidden":"h","also":null,"future":{"x":[1,2.50,"y"]}}`
	if string(out) != want {
		t.Errorf("encoded\n%s\nwant\n%s", out, want)
	}
}

func TestDeclaredMembersWinOverExtra(t *testing.T) {
	d := doc{header: header{ID: "a"}, Name: "n", Extra: jsonobj.Extra{"name": json.RawMessage(`"stale"`), "id": json.RawMessage(`"b"`)}}
	out, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"id":"a","name":"n"}` {
		t.Errorf("encoded %s", out)
	}
}

func TestEncodeRefusesInvalidExtra(t *testing.T) {
	d := doc{Extra: jsonobj.Extra{"x": json.RawMessage(`{`)}}
	if _, err := json.Marshal(d); err == nil {
		t.Error("invalid extra member encoded")
	}
}

func TestKnown(t *testing.T) {
	k := jsonobj.Known(reflectType[doc]())
	for _, name := range []string{"id", "note", "name"} {
		if !k[name] {
			t.Errorf("%s not known", name)
		}
	}
	if k["Hidden"] || k["Extra"] {
		t.Errorf("json:\"-\" fields counted as known: %v", k)
	}
}

func reflectType[T any]() reflect.Type { return reflect.TypeFor[T]() }
