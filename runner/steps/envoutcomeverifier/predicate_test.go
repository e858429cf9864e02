package envoutcomeverifier

import (
	"encoding/json"
	"testing"
)

func TestPredicatesAndExtract(t *testing.T) {
	data, _ := decodeJSON([]byte(`{"messages":[{"id":"m1","folder":"inbox","n":1},{"id":"m2","folder":"sent","to":["a@x"],"n":2.0}],"empty":[],"s":""}`))
	cases := []struct {
		extract, pred string
		want          bool
	}{
		{`"messages[1].id"`, `{"equals":"m2"}`, true},
		{`"messages[1].n"`, `{"equals":2}`, true}, // numbers by value
		{`"messages[5].id"`, `{"exists":false}`, true},
		{`"empty"`, `{"exists":false}`, true},
		{`"s"`, `{"exists":false}`, true},
		{`{"path":"messages","match":{"folder":{"equals":"sent"}},"take":"to"}`, `{"regex":"a@x"}`, true},
		{`{"path":"messages","match":{"folder":{"equals":"trash"}}}`, `{"exists":true}`, false},
		{`"messages[0]"`, `{"regex":"\"folder\": \"inbox\""}`, true}, // non-strings as Python json.dumps renders them
	}
	for _, c := range cases {
		var x Extract
		var p Predicate
		if err := json.Unmarshal([]byte(c.extract), &x); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(c.pred), &p); err != nil {
			t.Fatal(err)
		}
		if err := x.compile("extract"); err != nil {
			t.Fatal(err)
		}
		if err := p.compile("predicate"); err != nil {
			t.Fatal(err)
		}
		if got := p.Eval(x.Apply(data)); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.extract, c.pred, got, c.want)
		}
	}
	for _, bad := range []string{`{}`, `{"regex":"(","equals":1}`, `{"regex":"("}`} {
		var p Predicate
		_ = json.Unmarshal([]byte(bad), &p)
		if err := p.compile("predicate"); err == nil {
			t.Errorf("%s compiled", bad)
		}
	}
	x := Extract{Path: "a..b"}
	if err := x.compile("extract"); err == nil {
		t.Errorf("bad path compiled")
	}
}
