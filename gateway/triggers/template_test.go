package triggers

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"testing"

	"github.com/agentenv/agentenv/internal/jsonvalue"
)

func gv(s string) any {
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		panic(err)
	}
	return v
}

func TestRender(t *testing.T) {
	cc := &callCtx{args: gv(`{"title":"Hi","n":3,"tags":["a","b"],"nested":{"x":[10,{"y":"deep"}]}}`), result: gv(`{"id":"T-9","items":[1,2]}`)}
	bindings := map[string]any{"folder": "f2", "count": json.Number("12"), "obj": gv(`{"a":1}`)}
	cases := []struct{ in, want string }{
		{`{"a":"${args.n}"}`, `{"a":3}`},                  // whole: raw value
		{`{"a":"${args.tags}"}`, `{"a":["a","b"]}`},       // lists too
		{`{"a":"${result.items[*]}"}`, `{"a":[1,2]}`},     // [*] = the list itself
		{`{"a":"${args.nested.x[1].y}"}`, `{"a":"deep"}`}, // indexes
		{`{"a":"${args}"}`, `{"a":{"n":3,"nested":{"x":[10,{"y":"deep"}]},"tags":["a","b"],"title":"Hi"}}`},
		{`{"a":"n=${args.n} t=${args.tags}"}`, `{"a":"n=3 t=[\"a\", \"b\"]"}`}, // embedded: JSON, Python separators
		{`{"a":"${count}"}`, `{"a":"12"}`},                                     // binding: string form
		{`{"a":"${obj}"}`, `{"a":"{\"a\":1}"}`},
		{`{"a":"${folder}/${count}"}`, `{"a":"f2/12"}`},
		{`{"a":"${result.nope?}","b":1}`, `{"b":1}`},                                         // optional whole: key dropped
		{`{"a":["${result.nope?}",2]}`, `{"a":[2]}`},                                         // element dropped
		{`{"a":"x${result.nope?}y"}`, `{"a":"xy"}`},                                          // optional embedded: empty
		{`{"a":"${HOME}","b":"$HOME ${unknown}"}`, `{"a":"${HOME}","b":"$HOME ${unknown}"}`}, // unknown bare names stay
	}
	for _, c := range cases {
		out, err := render(gv(c.in), bindings, cc)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := string(mustMarshal(out)); got != c.want {
			t.Errorf("%s: got %s want %s", c.in, got, c.want)
		}
	}
	for _, in := range []string{`{"a":"${result.nope}"}`, `{"a":"x ${args.missing.deep} y"}`, `{"a":"${args.tags[5]}"}`} {
		if _, err := render(gv(in), nil, cc); err == nil {
			t.Errorf("%s: unresolved required placeholder rendered", in)
		}
	}
	// No context (time/state triggers): required args/result fail loud.
	if _, err := render(gv(`{"a":"${args.x}"}`), nil, nil); err == nil {
		t.Error("args placeholder without context rendered")
	}
}

func TestWhereAndPredicates(t *testing.T) {
	cc := &callCtx{args: gv(`{"priority":"high","n":2,"tags":[]}`), result: gv(`{"ok":true,"items":[{"id":1}]}`)}
	cases := []struct {
		field, pred string
		want        bool
	}{
		{"priority", `{"equals":"high"}`, true},
		{"priority", `{"equals":"low"}`, false},
		{"n", `{"equals":2.0}`, true},
		{"n", `{"regex":"^2$"}`, true},
		{"args.priority", `{"regex":"ig"}`, true},
		{"result.ok", `{"equals":true}`, true},
		{"result.items[0].id", `{"equals":1}`, true},
		{"result.items", `{"regex":"\\[\\{\"id\": 1\\}\\]"}`, true},
		{"tags", `{"exists":false}`, true},
		{"missing", `{"exists":false}`, true},
		{"priority", `{"exists":true}`, true},
		{"result.nope.deeper", `{"exists":true}`, false},
	}
	for _, c := range cases {
		p, err := parsePredicate(gv(c.pred), "x")
		if err != nil {
			t.Fatal(err)
		}
		if got := p.eval(whereClause{field: c.field}.value(cc)); got != c.want {
			t.Errorf("%s %s: got %v", c.field, c.pred, got)
		}
	}
}

func TestRedaction(t *testing.T) {
	long := make([]byte, 201)
	for i := range long {
		long[i] = 'a'
	}
	in := gv(`{"title":"Q3 plan","body":"secret","fileId":"f-1","owner_id":7,"id":"x","meta":{"name":"n","content":{"deep":true}},"to":["a@b.c"],"names":["x","y"],"mimeType":null,"kind":"` + string(long) + `","ok":true,"n":1.5}`)
	got := string(mustMarshal(echoArgs(in)))
	want := `{"body":{"redacted":{"len":6,"type":"str"}},"fileId":"f-1","id":"x","kind":{"redacted":{"len":201,"type":"str"}},"meta":{"content":{"deep":{"redacted":{"type":"bool"}}},"name":"n"},"mimeType":null,"n":{"redacted":{"type":"float"}},"names":[{"redacted":{"len":1,"type":"str"}},{"redacted":{"len":1,"type":"str"}}],"ok":{"redacted":{"type":"bool"}},"owner_id":7,"title":"Q3 plan","to":[{"redacted":{"len":5,"type":"str"}}]}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if digest("ok") != "2689367b205c16ce" {
		t.Fatal(digest("ok"))
	}
}

// Oracle values from CPython: random.Random(seed).random() and
// .expovariate(1/7200).
func TestPythonRandomStream(t *testing.T) {
	cases := []struct {
		seed   string
		random [2]float64
		exp    [2]float64
	}{
		{"7", [2]float64{0.32383276483316237, 0.15084917392450192}, [2]float64{7577.968450110673, 541.3953113276077}},
		{"0", [2]float64{0.8444218515250481, 0.7579544029403025}, [2]float64{3929.134647899468, 2157.424647939462}},
		{"-5", [2]float64{0.6229016948897019, 0.7417869892607294}, [2]float64{11416.967770853353, 20556.76373849992}},
		{"1099511627779", [2]float64{0.21978710637116716, 0.5494687768352203}, [2]float64{715.6195069050672, 28689.666021014513}},
		{"12345678901234567890123", [2]float64{0.15803717805068784, 0.9863365111874665}, [2]float64{1022.743682343852, 3581.821688025443}},
	}
	for _, c := range cases {
		seed, _ := new(big.Int).SetString(c.seed, 10)
		r := newPythonRandom(seed)
		for i := range 2 {
			if got := r.random(); got != c.random[i] {
				t.Errorf("seed %s random #%d: %v want %v", c.seed, i, got, c.random[i])
			}
		}
		for i := range 2 {
			if got := r.expovariate(1 / 7200.0); math.Abs(got-c.exp[i]) > 1e-9 {
				t.Errorf("seed %s expovariate #%d: %v want %v", c.seed, i, got, c.exp[i])
			}
		}
	}
}

func TestEventLogBounds(t *testing.T) {
	var l eventLog
	for i := 1; i <= 12345; i++ {
		l.seq++
		l.add(json.RawMessage(strconv.Itoa(i)))
	}
	all := l.all()
	if len(all) != eventsHead+eventsTail || l.dropped() != 12345-10000 {
		t.Fatalf("kept %d dropped %d", len(all), l.dropped())
	}
	if string(all[0]) != "1" || string(all[eventsHead-1]) != "1000" || string(all[eventsHead]) != "3346" || string(all[len(all)-1]) != "12345" {
		t.Fatalf("head/tail order: %s %s %s %s", all[0], all[eventsHead-1], all[eventsHead], all[len(all)-1])
	}
}
