package triggers

import (
	"strings"
	"testing"
)

func TestRegisterFailures(t *testing.T) {
	f := newFixture(t, nil)
	for _, name := range []string{"create_ticket", "notify", "get_notification", "count_emails", "send_email"} {
		f.host.text(name, "{}")
	}
	act := func(extra string) string {
		return `{"triggers":[{"id":"a","when":{"type":"action","tool":"create_ticket"` + extra + `},"actions":[]}]}`
	}
	withAction := func(a string) string {
		return `{"triggers":[{"id":"a","when":{"type":"action","tool":"create_ticket"},"actions":[` + a + `]}]}`
	}
	timeWhen := func(w string) string {
		return `{"triggers":[{"id":"t","when":{"type":"time"` + w + `},"actions":[]}]}`
	}
	cases := []struct{ body, want string }{
		{`{`, "Invalid JSON body"},
		{`[]`, "body must be a JSON object"},
		{`"x"`, "body must be a JSON object"},
		{`{"triggers":{}}`, "triggers must be a list"},
		{`{}`, "triggers must be a list"},
		{`{"triggers":[1]}`, "every trigger needs a non-empty string id"},
		{`{"triggers":[{"id":""}]}`, "every trigger needs a non-empty string id"},
		{`{"triggers":[{"id":7}]}`, "every trigger needs a non-empty string id"},
		{`{"triggers":[{"id":"a","when":{"type":"action","tool":"create_ticket"},"actions":[]},{"id":"a","when":{"type":"action","tool":"create_ticket"},"actions":[]}]}`, "trigger 'a': duplicate id"},
		{`{"triggers":[{"id":"a","when":{"type":"bogus"},"actions":[]}]}`, "trigger 'a': when.type must be 'action', 'state', or 'time'"},
		{`{"triggers":[{"id":"a","when":"action","actions":[]}]}`, "trigger 'a': when.type must be 'action', 'state', or 'time'"},
		{`{"triggers":[{"id":"a","when":{"type":"action"},"actions":[]}]}`, "trigger 'a': when.tool must be a non-empty string"},
		{act(`,"where":[]`), "trigger 'a': when.where must be an object"},
		{act(`,"where":{"priority":{"like":"x"}}`), "trigger 'a': where.priority: predicate must have exactly one of ('regex', 'equals', 'exists')"},
		{act(`,"where":{"priority":{"regex":"(","equals":1}}`), "trigger 'a': where.priority: predicate must have exactly one of ('regex', 'equals', 'exists')"},
		{act(`,"where":{"priority":{"exists":"yes"}}`), "trigger 'a': where.priority: exists must be a boolean"},
		{act(`,"where":{"result.a-b":{"exists":true}}`), "trigger 'a': where.result.a-b: invalid path segment 'a-b' in 'a-b'"},
		{act(`,"repeat":"yes"`), "trigger 'a': when.repeat must be a boolean"},
		{act(`,"where":{"x":{"regex":"("}}`), "trigger 'a': where.x: invalid regex"},
		{`{"triggers":[{"id":"a","when":{"type":"action","tool":"create_ticket"},"actions":{}}]}`, "trigger 'a': actions must be a list"},
		{`{"triggers":[{"id":"s","when":{"type":"state","check":{"tool":"count_emails"}},"actions":[]}]}`, "trigger 's': when.check: the last check step must carry a predicate"},
		{`{"triggers":[{"id":"s","when":{"type":"state","check":{"steps":[]}},"actions":[]}]}`, "trigger 's': when.check: check needs 'steps' or a single-step tool/predicate form"},
		{`{"triggers":[{"id":"s","when":{"type":"state","check":[]},"actions":[]}]}`, "trigger 's': when.check: check must be an object"},
		{`{"triggers":[{"id":"s","when":{"type":"state","repeat":true,"check":{"tool":"count_emails","predicate":{"exists":true}}},"actions":[]}]}`, "trigger 's': when.repeat is only valid on action triggers"},
		{`{"triggers":[{"id":"s","when":{"type":"state","check":{"tool":"count_emails","args":{"x":"${result.n}"},"predicate":{"exists":true}}},"actions":[]}]}`, "trigger 's': when.check.steps[0].args: ${result.n} needs a provoking tool call; only action triggers carry args/result"},
		{`{"triggers":[{"id":"s","when":{"type":"state","check":{"tool":"count_emails","args":[],"predicate":{"exists":true}}},"actions":[]}]}`, "trigger 's': when.check.steps[0]: args must be an object"},
		{`{"triggers":[{"id":"s","when":{"type":"state","check":{"tool":"count_emails","extract":5,"predicate":{"exists":true}}},"actions":[]}]}`, "trigger 's': when.check.steps[0]: extract must be a dot-path string or {path, match, take}"},
		{withAction(`{"type":"email"}`), "trigger 'a': actions[0]: type must be one of ('nl', 'tool', 'permission')"},
		{withAction(`{"type":"nl","instruction":"do it"}`), "trigger 'a': actions[0]: nl actions require an executor"},
		{withAction(`{"type":"nl","instruction":""}`), "trigger 'a': actions[0]: instruction must be a non-empty string"},
		{withAction(`{"type":"nl","instruction":"copy ${args.title}"}`), "trigger 'a': actions[0]: instruction contains '${args.title}', but nl instructions are not templated"},
		{withAction(`{"type":"nl","instruction":"x","as":"bot"}`), "trigger 'a': actions[0]: 'as' is only valid on tool actions"},
		{withAction(`{"type":"permission","action":"disable","role":"default","tools":"*","as":"bot"}`), "trigger 'a': actions[0]: 'as' is only valid on tool actions"},
		{withAction(`{"type":"tool","tool":"notify","as":"default"}`), "trigger 'a': actions[0]: 'as' must be a non-empty AgentEnv-Role other than 'default'"},
		{withAction(`{"type":"tool","tool":"notify","as":" "}`), "trigger 'a': actions[0]: 'as' must be a non-empty AgentEnv-Role other than 'default'"},
		{withAction(`{"type":"tool","tool":"notify","as":"${args.role}"}`), "trigger 'a': actions[0]: 'as' is not templated; name the role literally"},
		{withAction(`{"type":"tool","tool":""}`), "trigger 'a': actions[0]: tool must be a non-empty string"},
		{withAction(`{"type":"tool","tool":"notify","args":"x"}`), "trigger 'a': actions[0]: args must be an object"},
		{withAction(`{"type":"tool","tool":"notify","args":{"t":"${result.x }"}}`), "trigger 'a': actions[0].args: '${result.x }' is not a placeholder the engine can resolve"},
		{withAction(`{"type":"tool","tool":"notify","args":{"t":"${bogus.path}"}}`), "trigger 'a': actions[0].args: placeholder ${bogus.path} must be a check binding name or an args./result. path"},
		{withAction(`{"type":"tool","tool":"notify","args":{"t":"${args.}"}}`), "trigger 'a': actions[0].args: placeholder ${args.} has an empty path"},
		{withAction(`{"type":"tool","tool":"notify","args":{"t":"${unclosed"}}`), "is not a placeholder the engine can resolve"},
		{withAction(`{"type":"permission","action":"toggle","role":"r","tools":"*"}`), "trigger 'a': actions[0]: action must be 'enable' or 'disable'"},
		{withAction(`{"type":"permission","action":"disable","role":"","tools":"*"}`), "trigger 'a': actions[0]: role must be a non-empty string"},
		{withAction(`{"type":"permission","action":"disable","role":"r","tools":"send_email"}`), "trigger 'a': actions[0]: tools must be a list of strings or '*'"},
		{withAction(`{"type":"permission","action":"disable","role":"r","tools":[1]}`), "trigger 'a': actions[0]: tools must be a list of strings or '*'"},
		{withAction(`{"type":"tool","tool":"notify","verify":{"tool":"get_notification"}}`), "trigger 'a': actions[0].verify: the last check step must carry a predicate"},
		{withAction(`{"type":"tool","tool":"nope"}`), "trigger 'a': actions[0].tool names unknown tool 'nope'"},
		{`{"triggers":[{"id":"a","when":{"type":"action","tool":"missing"},"actions":[]}]}`, "trigger 'a': when.tool names unknown tool 'missing'"},
		{`{"triggers":[{"id":"a","when":{"type":"action","tool":"create_ticket"},"barrier":"provoking_call","actions":[]}]}`, "trigger 'a': barrier must be an object"},
		{`{"triggers":[{"id":"a","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"provoking_call","x":1},"actions":[]}]}`, "trigger 'a': barrier has unknown key(s) ['x']; expected ['at', 'timeout_seconds']"},
		{`{"triggers":[{"id":"a","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"later"},"actions":[]}]}`, "trigger 'a': barrier.at must be one of ['provoking_call'] (got 'later')"},
		{`{"triggers":[{"id":"a","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"provoking_call","timeout_seconds":0},"actions":[]}]}`, "trigger 'a': barrier.timeout_seconds must be a positive, finite number (got 0)"},
		{`{"triggers":[{"id":"a","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"provoking_call","timeout_seconds":true},"actions":[]}]}`, "trigger 'a': barrier.timeout_seconds must be a positive, finite number (got True)"},
		{`{"triggers":[{"id":"t","when":{"type":"time","at":"PT1H"},"barrier":{"at":"provoking_call"},"actions":[]}]}`, "trigger 't': barrier.at 'provoking_call' is only valid on action triggers"},
		{timeWhen(``), "trigger 't': when.type=='time' needs at least one of 'at', 'after', or 'every'"},
		{timeWhen(`,"at":"PT1H","after":"x","offset":"PT1H"`), "trigger 't': when may have at most one of 'at' / 'after'"},
		{timeWhen(`,"after":"x"`), "trigger 't': when.after requires a non-empty 'offset' duration"},
		{timeWhen(`,"after":"","offset":"PT1H"`), "trigger 't': when.after must be a non-empty trigger id"},
		{timeWhen(`,"at":"PT1H","offset":"PT1H"`), "trigger 't': 'offset' is only valid with 'after'"},
		{timeWhen(`,"at":"P1M"`), "trigger 't': at: invalid ISO-8601 duration 'P1M'"},
		{timeWhen(`,"at":"2026-03-01"`), "trigger 't': at: invalid RFC3339 virtual_time '2026-03-01'"},
		{timeWhen(`,"every":"PT0S"`), "trigger 't': every must be a positive duration"},
		{timeWhen(`,"every":"P"`), "trigger 't': every: invalid ISO-8601 duration 'P'"},
		{timeWhen(`,"every":"sometimes"`), "trigger 't': every: 'sometimes' is neither an ISO-8601 duration"},
		{timeWhen(`,"every":5`), "trigger 't': every must be a duration string or {dist, mean}"},
		{timeWhen(`,"every":{"dist":"normal","mean":"PT1H"},"seed":1`), "trigger 't': every.dist must be 'exp'"},
		{timeWhen(`,"every":{"dist":"exp","mean":"PT0S"},"seed":1`), "trigger 't': every.mean must be a positive ISO-8601 duration"},
		{timeWhen(`,"every":{"dist":"exp","mean":"PT1H"}`), "trigger 't': a stochastic 'every' requires an integer 'seed'"},
		{timeWhen(`,"every":{"dist":"exp","mean":"PT1H"},"seed":1.5`), "trigger 't': a stochastic 'every' requires an integer 'seed'"},
		{timeWhen(`,"every":"PT1H","seed":1`), "trigger 't': 'seed' is only valid with a stochastic 'every'"},
		{timeWhen(`,"at":"PT1H","count":2`), "trigger 't': 'count' requires a recurring 'every'"},
		{timeWhen(`,"at":"PT1H","until":"PT2H"`), "trigger 't': 'until' requires a recurring 'every'"},
		{timeWhen(`,"every":"PT1H","count":0`), "trigger 't': count must be a positive integer"},
		{timeWhen(`,"every":"PT1H","count":true`), "trigger 't': count must be a positive integer"},
		{timeWhen(`,"every":"PT1H","repeat":true`), "trigger 't': when.repeat is only valid on action triggers (time triggers recur via 'every')"},
		{timeWhen(`,"every":"CRON_TZ=UTC 0 * * * *"`), "cron time zones are not supported"},
		{`{"watch_roles":"default","triggers":[]}`, "watch_roles must be a list of non-empty strings"},
		{`{"watch_roles":[""],"triggers":[]}`, "watch_roles must be a list of non-empty strings"},
		{`{"executor":{"role":"executor"},"triggers":[]}`, "executor.a2a_url must be a non-empty string"},
		{`{"executor":{"a2a_url":"http://x"},"triggers":[]}`, "executor.role must be a non-empty string"},
		{`{"executor":{"a2a_url":"http://x","role":"default"},"triggers":[]}`, "executor.role 'default' must not be in watch_roles ['default']"},
		{`{"executor":{"a2a_url":"http://x","role":"ex","timeout_seconds":-1},"triggers":[]}`, "executor.timeout_seconds must be a positive number of seconds"},
	}
	for _, c := range cases {
		code, m := f.post(t, "/triggers/register", c.body)
		msg, _ := m["error"].(string)
		if code != 400 || m["ok"] != false || !strings.Contains(msg, c.want) {
			t.Errorf("%s\n  got %d %q\n  want 400 %q", c.body, code, msg, c.want)
		}
	}
	// Atomic: nothing of the failed batches was kept, config included.
	st := f.state(t)
	if len(st.Triggers) != 0 || len(st.Events) != 0 || st.Config.WatchRoles == nil || len(st.Config.WatchRoles) != 0 {
		t.Fatalf("rejected registrations left state behind: %+v", st)
	}
}

func TestRegisterAdditiveIdempotentConflicting(t *testing.T) {
	f := newFixture(t, nil)
	f.host.text("create_ticket", "{}")
	f.host.text("notify", "{}")
	one := `{"id":"one","when":{"type":"action","tool":"create_ticket"},"actions":[{"type":"tool","tool":"notify"}]}`
	two := `{"id":"two","when":{"type":"action","tool":"create_ticket","repeat":true},"actions":[]}`
	code, m := f.post(t, "/triggers/register", `{"triggers":[`+one+`]}`)
	if code != 200 || m["ok"] != true {
		t.Fatalf("%d %v", code, m)
	}
	code, m = f.post(t, "/triggers/register", `{"triggers":[`+one+`,`+two+`]}`)
	if code != 200 || join(m["added"]) != "one,two" || join(m["all"]) != "one,two" {
		t.Fatalf("additive: %d %v", code, m)
	}
	if n := len(eventsOf(f.eng, "added")); n != 2 {
		t.Fatalf("identical re-add emitted added again: %d events", n)
	}
	changed := strings.Replace(one, `"notify"`, `"create_ticket"`, 1)
	code, m = f.post(t, "/triggers/register", `{"triggers":[`+changed+`]}`)
	if code != 400 || m["error"] != "trigger 'one': already registered with a different spec — remove it first or use a new id" {
		t.Fatalf("conflicting re-add: %d %v", code, m)
	}
	// A generated id.
	code, m = f.post(t, "/triggers/register", `{"triggers":[{"when":{"type":"action","tool":"create_ticket"},"actions":[]}]}`)
	added, _ := m["added"].([]any)
	if code != 200 || len(added) != 1 || !strings.HasPrefix(added[0].(string), "trg_") || len(added[0].(string)) != 16 {
		t.Fatalf("generated id: %d %v", code, m)
	}
	// watch_roles is set once.
	code, m = f.post(t, "/triggers/register", `{"watch_roles":["agent"],"triggers":[]}`)
	if code != 400 || m["error"] != "watch_roles ['agent'] conflicts with the already-registered ['default'] — clear to change it" {
		t.Fatalf("watch_roles change: %d %v", code, m)
	}
	// Executor: set when unset, refused when changed.
	if code, m = f.post(t, "/triggers/register", `{"executor":{"a2a_url":"http://ex:8001/","role":"executor"},"triggers":[]}`); code != 200 {
		t.Fatalf("executor set: %d %v", code, m)
	}
	if code, _ = f.post(t, "/triggers/register", `{"executor":{"a2a_url":"http://ex:8001","role":"executor","timeout_seconds":120},"triggers":[]}`); code != 200 {
		t.Fatal("same executor (trailing slash stripped, default timeout) refused")
	}
	if code, m = f.post(t, "/triggers/register", `{"executor":{"a2a_url":"http://other","role":"executor"},"triggers":[]}`); code != 400 || m["error"] != "executor conflicts with the already-registered executor — clear to change it" {
		t.Fatalf("executor change: %d %v", code, m)
	}
	st := f.state(t)
	if !st.Config.ExecutorConfigured || join2(st.Config.WatchRoles) != "default" {
		t.Fatalf("config %+v", st.Config)
	}
	// remove: existing ids only; removed ids may be re-added.
	code, m = f.post(t, "/triggers/remove", `{"ids":["one","ghost"]}`)
	if code != 200 || join(m["removed"]) != "one" {
		t.Fatalf("remove: %d %v", code, m)
	}
	if code, m = f.post(t, "/triggers/remove", `{"ids":"one"}`); code != 400 || m["error"] != "ids must be a list of non-empty strings" {
		t.Fatalf("remove bad ids: %d %v", code, m)
	}
	if code, _ = f.post(t, "/triggers/register", `{"triggers":[`+changed+`]}`); code != 200 {
		t.Fatal("re-add after remove refused")
	}
	// clear: full reset.
	if code, m = f.post(t, "/triggers/clear", ``); code != 200 || m["ok"] != true {
		t.Fatalf("clear: %d %v", code, m)
	}
	st = f.state(t)
	if len(st.Triggers) != 0 || len(st.Events) != 0 || st.EventsDropped != 0 || st.Config.ExecutorConfigured || len(st.Config.WatchRoles) != 0 {
		t.Fatalf("clear left %+v", st)
	}
	if code, _ = f.post(t, "/triggers/register", `{"watch_roles":["agent"],"triggers":[]}`); code != 200 {
		t.Fatal("watch_roles not reset by clear")
	}
	var first map[string]any
	for _, ev := range eventsOf(f.eng, "") {
		first = ev
		break
	}
	_ = first
}

func TestRegisterBeforeDiscoverySkipsToolCheck(t *testing.T) {
	f := newFixture(t, nil)
	f.host.discovered = false
	if code, m := f.post(t, "/triggers/register", `{"triggers":[{"id":"a","when":{"type":"action","tool":"later"},"actions":[{"type":"tool","tool":"also_later"}]}]}`); code != 200 {
		t.Fatalf("%d %v", code, m)
	}
}

func TestBodyLimits(t *testing.T) {
	f := newFixture(t, nil)
	big := `{"triggers":[],"pad":"` + strings.Repeat("x", 70<<10) + `"}`
	for _, p := range []string{"/triggers/register", "/triggers/remove"} {
		if code, m := f.post(t, p, big); code != 413 || m["error"] != "request body too large" {
			t.Errorf("%s oversized: %d %v", p, code, m)
		}
		if code, m := f.post(t, p, `[1]`); code != 400 || m["error"] != "body must be a JSON object" {
			t.Errorf("%s non-object: %d %v", p, code, m)
		}
		if code, m := f.post(t, p, `{"a":1} x`); code != 400 || m["error"] != "Invalid JSON body" {
			t.Errorf("%s trailing garbage: %d %v", p, code, m)
		}
	}
}

func join(v any) string {
	l, _ := v.([]any)
	s := make([]string, len(l))
	for i, x := range l {
		s[i], _ = x.(string)
	}
	return strings.Join(s, ",")
}

func join2(s []string) string { return strings.Join(s, ",") }
