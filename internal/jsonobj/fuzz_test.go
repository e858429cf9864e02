package jsonobj_test

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzRoundTrip: any JSON object that decodes into doc encodes back to an
// object with the same members, values compared as generic JSON.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{`{}`, `{"id":"a","name":"n"}`, `{"id":"a","x":[1,{"y":null}],"note":"t"}`, `{"Hidden":1,"z":"\u00e9"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var d doc
		if json.Unmarshal(in, &d) != nil {
			return
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("encode %s: %v", in, err)
		}
		var a, b map[string]any
		if err := json.Unmarshal(in, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatalf("encoded %s is not JSON: %v", out, err)
		}
		for k, v := range a {
			if k == "note" && v == "" || v == nil && (k == "id" || k == "name" || k == "note") {
				continue // zero values of declared members
			}
			if !reflect.DeepEqual(v, b[k]) {
				t.Fatalf("%s: in %s, out %s", k, in, out)
			}
		}
	})
}
