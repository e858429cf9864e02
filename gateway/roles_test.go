package gateway

import (
	"encoding/json"
	"slices"
	"testing"
)

// roleView is what a role sees on /step list_tools and on /mcp tools/list;
// both must agree (the same rules are enforced on every path).
func (tg *testGateway) roleView(t *testing.T, r string) []string {
	t.Helper()
	st, body := tg.post(t, "/step", role(r), `{"action":"list_tools"}`)
	if st != 200 {
		t.Fatalf("list_tools = %d %s", st, body)
	}
	var lt struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	json.Unmarshal(body, &lt)
	var step []string
	for _, x := range lt.Tools {
		step = append(step, x.Name)
	}
	mcpView := tg.mcpClient(t, r).toolNames(t)
	if !slices.Equal(step, mcpView) {
		t.Fatalf("role %s: /step sees %v but /mcp sees %v", r, step, mcpView)
	}
	return step
}

func (tg *testGateway) rule(t *testing.T, verb, body string) string {
	t.Helper()
	st, b := tg.post(t, "/tools/"+verb, nil, body)
	if st != 200 {
		t.Fatalf("/tools/%s %s = %d %s", verb, body, st, b)
	}
	return string(b)
}

func (tg *testGateway) stepStatus(t *testing.T, r, tool string) int {
	t.Helper()
	st, _ := tg.post(t, "/step", role(r), `{"action":"call_tool","tool_name":"`+tool+`","arguments":{}}`)
	return st
}

// TestRoleRuleWorkedExamples pins every row of the reference's worked examples.
func TestRoleRuleWorkedExamples(t *testing.T) {
	c := startChild(t, "mail", nil)
	c.srv.AddTools(c.echoTool("list_emails"), c.echoTool("x"))
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	all := []string{"list_emails", "mail_echo", "x"}
	if v := tg.roleView(t, "default"); !slices.Equal(v, all) {
		t.Fatalf("initial view %v", v)
	}
	without := []string{"mail_echo", "x"}

	// 1
	tg.rule(t, "disable", `{"role":"default","tools":["list_emails"]}`)
	if v := tg.roleView(t, "default"); !slices.Equal(v, without) {
		t.Fatalf("row 1 default: %v", v)
	}
	if v := tg.roleView(t, "cli"); !slices.Equal(v, all) {
		t.Fatalf("row 1 cli: %v", v)
	}
	if tg.stepStatus(t, "default", "list_emails") != 403 || tg.stepStatus(t, "cli", "list_emails") != 200 {
		t.Fatal("row 1: /step statuses")
	}
	// 2
	tg.rule(t, "enable", `{"role":"default","tools":["list_emails"]}`)
	if v := tg.roleView(t, "default"); !slices.Equal(v, all) {
		t.Fatalf("row 2: %v", v)
	}
	// 3
	if got := tg.rule(t, "disable", `{"role":"*","tools":["list_emails"]}`); got != `{"role":"*","disabled":["list_emails"],"allowed":[]}`+"\n" {
		t.Fatalf("row 3 response %s", got)
	}
	for _, r := range []string{"default", "cli", "never-seen"} {
		if v := tg.roleView(t, r); !slices.Equal(v, without) {
			t.Fatalf("row 3 %s: %v", r, v)
		}
	}
	// 4
	if got := tg.rule(t, "enable", `{"role":"*","tools":["list_emails"]}`); got != `{"role":"*","disabled":[],"allowed":["list_emails"]}`+"\n" {
		t.Fatalf("row 4 response %s", got)
	}
	if v := tg.roleView(t, "default"); !slices.Equal(v, all) {
		t.Fatalf("row 4: %v", v)
	}
	// 5
	if got := tg.rule(t, "disable", `{"role":"*","tools":"*"}`); got != `{"role":"*","disabled":["*"],"allowed":[]}`+"\n" {
		t.Fatalf("row 5 response %s", got)
	}
	for _, r := range []string{"default", "cli"} {
		if v := tg.roleView(t, r); len(v) != 0 {
			t.Fatalf("row 5 %s: %v", r, v)
		}
	}
	// 6
	tg.rule(t, "enable", `{"role":"cli","tools":"*"}`)
	if v := tg.roleView(t, "cli"); !slices.Equal(v, all) {
		t.Fatalf("row 6 cli: %v", v)
	}
	if v := tg.roleView(t, "default"); len(v) != 0 {
		t.Fatalf("row 6 default: %v", v)
	}
	// 7
	tg.rule(t, "disable", `{"role":"*","tools":"*"}`)
	if v := tg.roleView(t, "cli"); len(v) != 0 {
		t.Fatalf("row 7 cli: %v", v)
	}
	// 8
	tg.rule(t, "enable", `{"role":"*","tools":"*"}`)
	tg.rule(t, "disable", `{"role":"r","tools":"*"}`)
	tg.rule(t, "enable", `{"role":"r","tools":["x"]}`)
	if v := tg.roleView(t, "r"); !slices.Equal(v, []string{"x"}) {
		t.Fatalf("row 8: %v", v)
	}
	// 9: global x disabled, r map {*: enabled}
	tg.rule(t, "enable", `{"role":"*","tools":"*"}`)
	tg.rule(t, "disable", `{"role":"*","tools":["x"]}`)
	tg.rule(t, "enable", `{"role":"r","tools":"*"}`)
	if v := tg.roleView(t, "r"); !slices.Contains(v, "x") {
		t.Fatalf("row 9: %v", v)
	}
	if v := tg.roleView(t, "default"); slices.Contains(v, "x") {
		t.Fatalf("row 9 default still sees x: %v", v)
	}
	// 10: r map {*: disabled, x: enabled}
	tg.rule(t, "disable", `{"role":"r","tools":"*"}`)
	tg.rule(t, "enable", `{"role":"r","tools":["x"]}`)
	if v := tg.roleView(t, "r"); !slices.Equal(v, []string{"x"}) {
		t.Fatalf("row 10: %v", v)
	}
	// /state shows every role's own map.
	_, body := tg.get(t, "/state", nil)
	var st struct {
		Roles map[string]struct{ Disabled, Allowed []string } `json:"roles"`
	}
	json.Unmarshal(body, &st)
	if r := st.Roles["r"]; !slices.Equal(r.Disabled, []string{"*"}) || !slices.Equal(r.Allowed, []string{"x"}) {
		t.Fatalf("/state roles = %s", body)
	}
}

func TestRoleRuleMutationTable(t *testing.T) {
	r := newRoleRules()
	apply := func(role string, tools []string, all, disable bool) {
		r.setRule(role, tools, all, disable)
	}
	apply("a", []string{"t"}, false, true)
	apply("b", []string{"u"}, false, true)
	// role *, tool T: set in every existing role's map and the global map.
	apply("*", []string{"v"}, false, true)
	snap := r.snapshot()
	for _, role := range []string{"a", "b", "*"} {
		if !slices.Contains(snap[role].Disabled, "v") {
			t.Fatalf("role %s lacks v: %+v", role, snap)
		}
	}
	// empty list: no-op, creates nothing.
	apply("c", []string{}, false, true)
	if _, ok := r.snapshot()["c"]; ok {
		t.Fatal("empty list created a role map")
	}
	// role R, tools *: replaces the whole map.
	apply("a", nil, true, false)
	if s := r.snapshot()["a"]; !slices.Equal(s.Allowed, []string{"*"}) || len(s.Disabled) != 0 {
		t.Fatalf("R,* = %+v", s)
	}
	// role *, tools *: wipes everything.
	apply("*", nil, true, true)
	if s := r.snapshot(); len(s) != 1 || !slices.Equal(s["*"].Disabled, []string{"*"}) {
		t.Fatalf("*,* = %+v", s)
	}
}

func TestRoleRuleBodyErrors(t *testing.T) {
	tg := startGateway(t, &Config{MaxBodyBytes: 64}, nil)
	cases := []struct{ body, status, msg string }{
		{`{`, "400", "Invalid JSON body"},
		{`[]`, "400", "body must be a JSON object"},
		{`"x"`, "400", "body must be a JSON object"},
		{`{"tools":["a"]}`, "400", "Missing or invalid 'role' field"},
		{`{"role":"","tools":["a"]}`, "400", "Missing or invalid 'role' field"},
		{`{"role":5,"tools":["a"]}`, "400", "Missing or invalid 'role' field"},
		{`{"role":"r"}`, "400", "'tools' must be a list of strings or the string '*'"},
		{`{"role":"r","tools":"a"}`, "400", "'tools' must be a list of strings or the string '*'"},
		{`{"role":"r","tools":[1]}`, "400", "'tools' must be a list of strings or the string '*'"},
		{`{"role":"r","tools":null}`, "400", "'tools' must be a list of strings or the string '*'"},
		{`{"role":"r","tools":["` + string(make([]byte, 100)) + `"]}`, "413", "request body too large"},
	}
	for _, tc := range cases {
		for _, verb := range []string{"disable", "enable"} {
			st, body := tg.post(t, "/tools/"+verb, nil, tc.body)
			m := mustJSONMap(t, body)
			if itoa(st) != tc.status || m["error"] != tc.msg {
				t.Errorf("/tools/%s %q = %d %s; want %s %q", verb, tc.body, st, body, tc.status, tc.msg)
			}
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestControlToken(t *testing.T) {
	c := startChild(t, "mail", nil)
	tg := startGateway(t, &Config{Servers: serversOf(c), ControlToken: "t0ken"}, nil)
	body := `{"role":"default","tools":["mail_echo"]}`
	for _, hdr := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": "t0ken"}} {
		st, b := tg.post(t, "/tools/disable", hdr, body)
		if st != 401 || mustJSONMap(t, b)["error"] != "control token required" {
			t.Fatalf("%v → %d %s", hdr, st, b)
		}
	}
	if st, b := tg.post(t, "/triggers/clear", nil, ``); st != 401 || mustJSONMap(t, b)["ok"] != false {
		t.Fatalf("/triggers/clear without token → %d %s", st, b)
	}
	if st, _ := tg.post(t, "/tools/disable", map[string]string{"Authorization": "Bearer t0ken"}, body); st != 200 {
		t.Fatalf("with the token → %d", st)
	}
	// Agent-facing routes stay open.
	if st, _ := tg.post(t, "/step", nil, `{"action":"list_tools"}`); st != 200 {
		t.Fatalf("/step → %d", st)
	}
	if st, _ := tg.get(t, "/state", nil); st != 200 {
		t.Fatalf("/state → %d", st)
	}
}
