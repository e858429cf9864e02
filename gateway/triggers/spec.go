package triggers

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/agentenv/agentenv/gateway/vclock"
	"github.com/agentenv/agentenv/internal/jsonvalue"
	"github.com/agentenv/agentenv/protocol"
)

// SpecError is a refused registration (HTTP 400); its message names the
// field at fault.
type SpecError struct{ Msg string }

func (e *SpecError) Error() string { return e.Msg }

func specErrorf(format string, args ...any) error {
	return &SpecError{Msg: fmt.Sprintf(format, args...)}
}

// Condition types.
const (
	kindAction = "action"
	kindState  = "state"
	kindTime   = "time"
)

// whenEchoKeys are the schedule keys /triggers/state echoes, in order.
var whenEchoKeys = []string{"type", "tool", "repeat", "at", "after", "offset", "every", "count", "until", "seed"}

// spec is a validated, compiled trigger.
type spec struct {
	id       string
	canon    string // canonical JSON of the normalised spec, for re-add comparison
	whenEcho json.RawMessage
	barrier  *barrierSpec
	// barrierRaw is the barrier as registered (nil when absent).
	barrierRaw json.RawMessage
	kind       string

	tool   string        // action
	where  []whereClause // action
	repeat bool          // action
	check  *check        // state
	tm     *timeSpec     // time

	actions []action
}

type whereClause struct {
	field string
	pred  *predicate
}

// whereValue is the value a where key names: args./result. paths, else a
// bare top-level argument.
func (w whereClause) value(cc *callCtx) any {
	root, path := ctxPath(w.field)
	if root != "" && path != "" {
		rv := cc.args
		if root == "result" {
			rv = cc.result
		}
		if m, ok := rv.(map[string]any); ok {
			return jsonvalue.Lookup(m, path)
		}
		return nil
	}
	if m, ok := cc.args.(map[string]any); ok {
		return m[w.field]
	}
	return nil
}

type barrierSpec struct {
	timeout time.Duration // 0 = the engine default
	// timeoutJSON echoes timeout_seconds as registered (for timeout_s).
	timeoutJSON json.Number
}

type predicate struct {
	kind   string // regex, equals, exists
	re     *regexp.Regexp
	equals any
	exists bool
}

func (p *predicate) eval(v any) bool {
	switch p.kind {
	case "regex":
		return p.re.MatchString(jsonvalue.Text(v))
	case "equals":
		return jsonvalue.Equal(v, p.equals)
	}
	return jsonvalue.NonEmpty(v) == p.exists
}

type extract struct {
	path  string // dot path, or the list path of the object form
	obj   bool
	match []whereClause // field → predicate on list items
	take  string
}

func (x *extract) apply(data any, raw string) any {
	if x == nil {
		return raw
	}
	if !x.obj {
		return jsonvalue.Lookup(data, x.path)
	}
	items, ok := jsonvalue.Lookup(data, x.path).([]any)
	if !ok {
		return nil
	}
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		all := true
		for _, c := range x.match {
			if !c.pred.eval(m[c.field]) {
				all = false
				break
			}
		}
		if all {
			if x.take != "" {
				return m[x.take]
			}
			return m
		}
	}
	return nil
}

type step struct {
	tool    string
	args    map[string]any
	extract *extract
	bind    string
	pred    *predicate
}

type check struct{ steps []step }

// Action types.
const (
	actTool       = "tool"
	actPermission = "permission"
	actNL         = "nl"
)

type action struct {
	typ string
	// tool
	tool string
	args map[string]any
	as   string
	// permission
	permAction string // enable | disable
	role       string
	tools      []string // ["*"] for the wildcard (the log echo)
	allTools   bool     // tools was the string "*"
	// nl
	instruction string

	verify *check
}

// timeSpec is a compiled time condition.
type timeSpec struct {
	at       *markSpec
	after    string
	hasAfter bool
	offset   vclock.Duration
	every    *everySpec
	count    int64 // 0 = unbounded
	until    *markSpec
	seed     *big.Int
}

// markSpec is an instant: absolute, or relative to the clock's t0.
type markSpec struct {
	rel bool
	abs time.Time
	d   vclock.Duration
}

func (m *markSpec) resolve(t0 time.Time) time.Time {
	if m.rel {
		return vclock.Advance(t0, m.d)
	}
	return m.abs
}

type everySpec struct {
	fixed vclock.Duration
	exp   bool
	mean  vclock.Duration
	cron  cron.Schedule
}

// parseSpec validates one trigger object (raw is its generic JSON with the
// id already set) and compiles it. executor is the effective executor.
func parseSpec(raw map[string]any, id string, executor *executorConfig) (*spec, error) {
	w := fmt.Sprintf("trigger '%s'", id)
	s := &spec{id: id}
	when, ok := raw["when"].(map[string]any)
	typ, _ := when["type"].(string)
	if !ok || (typ != kindAction && typ != kindState && typ != kindTime) {
		return nil, specErrorf("%s: when.type must be 'action', 'state', or 'time'", w)
	}
	s.kind = typ
	norm := cloneMap(raw)
	normWhen := cloneMap(when)
	norm["when"] = normWhen
	switch typ {
	case kindAction:
		if err := s.parseActionWhen(when, w); err != nil {
			return nil, err
		}
	case kindState:
		if _, ok := when["repeat"]; ok {
			return nil, specErrorf("%s: when.repeat is only valid on action triggers", w)
		}
		c, steps, err := parseCheck(when["check"], w+": when.check", false)
		if err != nil {
			return nil, err
		}
		s.check = c
		normWhen["check"] = map[string]any{"steps": steps}
	case kindTime:
		if _, ok := when["repeat"]; ok {
			return nil, specErrorf("%s: when.repeat is only valid on action triggers (time triggers recur via 'every')", w)
		}
		tm, err := parseTimeWhen(when, w)
		if err != nil {
			return nil, err
		}
		s.tm = tm
	}
	if b, ok := raw["barrier"]; ok && b != nil {
		bs, err := parseBarrier(b, w, typ == kindAction)
		if err != nil {
			return nil, err
		}
		s.barrier = bs
		s.barrierRaw = mustMarshal(b)
	} else {
		delete(norm, "barrier")
	}
	acts, ok := raw["actions"].([]any)
	if !ok {
		return nil, specErrorf("%s: actions must be a list", w)
	}
	normActs := make([]any, len(acts))
	for i, a := range acts {
		act, normAct, err := parseAction(a, fmt.Sprintf("%s: actions[%d]", w, i), typ == kindAction, executor)
		if err != nil {
			return nil, err
		}
		s.actions = append(s.actions, act)
		normActs[i] = normAct
	}
	norm["actions"] = normActs
	s.canon = string(mustMarshal(norm))
	echo := make([]Field, 0, len(whenEchoKeys))
	for _, k := range whenEchoKeys {
		if v, ok := when[k]; ok {
			echo = append(echo, Field{k, v})
		}
	}
	s.whenEcho, _ = marshalOrdered(echo)
	return s, nil
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (s *spec) parseActionWhen(when map[string]any, w string) error {
	tool, ok := when["tool"].(string)
	if !ok || tool == "" {
		return specErrorf("%s: when.tool must be a non-empty string", w)
	}
	s.tool = tool
	if raw, ok := when["where"]; ok {
		where, ok := raw.(map[string]any)
		if !ok {
			return specErrorf("%s: when.where must be an object", w)
		}
		for _, field := range sortedKeys(where) {
			p, err := parsePredicate(where[field], fmt.Sprintf("%s: where.%s", w, field))
			if err != nil {
				return err
			}
			if _, path := ctxPath(field); path != "" {
				if err := validatePath(path, fmt.Sprintf("%s: where.%s", w, field)); err != nil {
					return err
				}
			}
			s.where = append(s.where, whereClause{field: field, pred: p})
		}
	}
	if raw, ok := when["repeat"]; ok {
		b, ok := raw.(bool)
		if !ok {
			return specErrorf("%s: when.repeat must be a boolean", w)
		}
		s.repeat = b
	}
	return nil
}

func parsePredicate(v any, where string) (*predicate, error) {
	m, ok := v.(map[string]any)
	n := 0
	for _, k := range []string{"regex", "equals", "exists"} {
		if _, has := m[k]; has {
			n++
		}
	}
	if !ok || n != 1 {
		return nil, specErrorf("%s: predicate must have exactly one of ('regex', 'equals', 'exists')", where)
	}
	if r, has := m["regex"]; has {
		rs, ok := r.(string)
		if !ok {
			return nil, specErrorf("%s: invalid regex: must be a string, got %s", where, pyType(r))
		}
		re, err := regexp.Compile(rs)
		if err != nil {
			return nil, specErrorf("%s: invalid regex: %v", where, err)
		}
		return &predicate{kind: "regex", re: re}, nil
	}
	if e, has := m["equals"]; has {
		return &predicate{kind: "equals", equals: e}, nil
	}
	b, ok := m["exists"].(bool)
	if !ok {
		return nil, specErrorf("%s: exists must be a boolean", where)
	}
	return &predicate{kind: "exists", exists: b}, nil
}

// parseCheck validates a check ({"steps":[…]} or the single-step
// shorthand) and returns it with its normalised steps list.
func parseCheck(v any, where string, allowCtx bool) (*check, []any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, specErrorf("%s: check must be an object", where)
	}
	var steps []any
	if raw, has := m["steps"]; has {
		steps, _ = raw.([]any)
		if steps == nil {
			return nil, nil, specErrorf("%s: check needs 'steps' or a single-step tool/predicate form", where)
		}
	} else if _, has := m["tool"]; has {
		steps = []any{m}
	}
	if len(steps) == 0 {
		return nil, nil, specErrorf("%s: check needs 'steps' or a single-step tool/predicate form", where)
	}
	c := &check{}
	for i, raw := range steps {
		sw := fmt.Sprintf("%s.steps[%d]", where, i)
		sm, ok := raw.(map[string]any)
		if !ok {
			return nil, nil, specErrorf("%s: step must be an object", sw)
		}
		st := step{}
		if st.tool, ok = sm["tool"].(string); !ok || st.tool == "" {
			return nil, nil, specErrorf("%s: tool must be a non-empty string", sw)
		}
		if a, has := sm["args"]; has {
			if st.args, ok = a.(map[string]any); !ok {
				return nil, nil, specErrorf("%s: args must be an object", sw)
			}
		}
		if err := validatePlaceholders(st.args, sw+".args", allowCtx); err != nil {
			return nil, nil, err
		}
		if x, has := sm["extract"]; has && x != nil {
			ex, err := parseExtract(x, sw)
			if err != nil {
				return nil, nil, err
			}
			st.extract = ex
		}
		if b, has := sm["bind"]; has && b != nil {
			name, ok := b.(string)
			if !ok || !wordRe.MatchString(name) {
				return nil, nil, specErrorf("%s: bind must be a name of letters, digits and underscores", sw)
			}
			st.bind = name
		}
		if p, has := sm["predicate"]; has {
			pr, err := parsePredicate(p, sw+".predicate")
			if err != nil {
				return nil, nil, err
			}
			st.pred = pr
		}
		c.steps = append(c.steps, st)
	}
	if c.steps[len(c.steps)-1].pred == nil {
		return nil, nil, specErrorf("%s: the last check step must carry a predicate", where)
	}
	return c, steps, nil
}

func parseExtract(x any, sw string) (*extract, error) {
	if s, ok := x.(string); ok {
		if err := validatePath(s, sw+".extract"); err != nil {
			return nil, err
		}
		return &extract{path: s}, nil
	}
	m, ok := x.(map[string]any)
	path, okPath := m["path"].(string)
	if !ok || !okPath {
		return nil, specErrorf("%s: extract must be a dot-path string or {path, match, take}", sw)
	}
	if err := validatePath(path, sw+".extract.path"); err != nil {
		return nil, err
	}
	ex := &extract{path: path, obj: true}
	if raw, has := m["match"]; has && raw != nil {
		match, ok := raw.(map[string]any)
		if !ok {
			return nil, specErrorf("%s: extract.match must be an object of field predicates", sw)
		}
		for _, f := range sortedKeys(match) {
			p, err := parsePredicate(match[f], fmt.Sprintf("%s.extract.match.%s", sw, f))
			if err != nil {
				return nil, err
			}
			ex.match = append(ex.match, whereClause{field: f, pred: p})
		}
	}
	if raw, has := m["take"]; has && raw != nil {
		take, ok := raw.(string)
		if !ok {
			return nil, specErrorf("%s: extract.take must be a string", sw)
		}
		ex.take = take
	}
	return ex, nil
}

func parseBarrier(b any, w string, isAction bool) (*barrierSpec, error) {
	w += ": barrier"
	m, ok := b.(map[string]any)
	if !ok {
		return nil, specErrorf(`%s must be an object, e.g. {"at": "provoking_call"}`, w)
	}
	var unknown []string
	for _, k := range sortedKeys(m) {
		if k != "at" && k != "timeout_seconds" {
			unknown = append(unknown, pyQuote(k))
		}
	}
	if len(unknown) > 0 {
		return nil, specErrorf("%s has unknown key(s) [%s]; expected ['at', 'timeout_seconds']", w, strings.Join(unknown, ", "))
	}
	if at, _ := m["at"].(string); at != "provoking_call" {
		return nil, specErrorf("%s.at must be one of ['provoking_call'] (got %s)", w, pyRepr(m["at"]))
	}
	if !isAction {
		return nil, specErrorf("%s.at 'provoking_call' is only valid on action triggers — they alone have a provoking call to hold", w)
	}
	bs := &barrierSpec{}
	if t, has := m["timeout_seconds"]; has && t != nil {
		n, ok := t.(json.Number)
		f, err := strconv.ParseFloat(string(n), 64)
		if !ok || err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f <= 0 {
			return nil, specErrorf("%s.timeout_seconds must be a positive, finite number (got %s)", w, pyRepr(t))
		}
		bs.timeout = secondsToDuration(f)
		bs.timeoutJSON = n
	}
	return bs, nil
}

func secondsToDuration(f float64) time.Duration {
	if f*1e9 >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(f * 1e9)
}

// pyRepr renders a generic value for a message, roughly like Python's repr.
func pyRepr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return pyQuote(x)
	}
	return jsonvalue.Dumps(v)
}

func parseAction(a any, w string, hasCtx bool, executor *executorConfig) (action, any, error) {
	m, _ := a.(map[string]any)
	typ, _ := m["type"].(string)
	if m == nil || (typ != actNL && typ != actTool && typ != actPermission) {
		return action{}, nil, specErrorf("%s: type must be one of ('nl', 'tool', 'permission')", w)
	}
	norm := cloneMap(m)
	act := action{typ: typ}
	if _, has := m["as"]; has && typ != actTool {
		return action{}, nil, specErrorf("%s: 'as' is only valid on tool actions", w)
	}
	switch typ {
	case actNL:
		ins, ok := m["instruction"].(string)
		if !ok || ins == "" {
			return action{}, nil, specErrorf("%s: instruction must be a non-empty string", w)
		}
		for _, tok := range varLooseRe.FindAllString(ins, -1) {
			if isCtxAttempt(tok) {
				return action{}, nil, specErrorf("%s: instruction contains %s, but nl instructions are not templated; read the provoking call from a tool action's args", w, pyQuote(tok))
			}
		}
		if executor == nil {
			return action{}, nil, specErrorf("%s: nl actions require an executor", w)
		}
		act.instruction = ins
	case actTool:
		tool, ok := m["tool"].(string)
		if !ok || tool == "" {
			return action{}, nil, specErrorf("%s: tool must be a non-empty string", w)
		}
		act.tool = tool
		if raw, has := m["args"]; has {
			if act.args, ok = raw.(map[string]any); !ok {
				return action{}, nil, specErrorf("%s: args must be an object", w)
			}
		}
		if err := validatePlaceholders(act.args, w+".args", hasCtx); err != nil {
			return action{}, nil, err
		}
		if raw, has := m["as"]; has && raw != nil {
			as, ok := raw.(string)
			if !ok || strings.TrimSpace(as) == "" || as == protocol.DefaultRole {
				return action{}, nil, specErrorf("%s: 'as' must be a non-empty AgentEnv-Role other than 'default'", w)
			}
			if varLooseRe.MatchString(as) {
				return action{}, nil, specErrorf("%s: 'as' is not templated; name the role literally", w)
			}
			act.as = as
		}
	case actPermission:
		pa, _ := m["action"].(string)
		if pa != "enable" && pa != "disable" {
			return action{}, nil, specErrorf("%s: action must be 'enable' or 'disable'", w)
		}
		act.permAction = pa
		role, ok := m["role"].(string)
		if !ok || role == "" {
			return action{}, nil, specErrorf("%s: role must be a non-empty string", w)
		}
		act.role = role
		switch t := m["tools"].(type) {
		case string:
			if t != "*" {
				return action{}, nil, specErrorf("%s: tools must be a list of strings or '*'", w)
			}
			act.tools, act.allTools = []string{"*"}, true
		case []any:
			act.tools = []string{}
			for _, e := range t {
				s, ok := e.(string)
				if !ok {
					return action{}, nil, specErrorf("%s: tools must be a list of strings or '*'", w)
				}
				act.tools = append(act.tools, s)
			}
		default:
			return action{}, nil, specErrorf("%s: tools must be a list of strings or '*'", w)
		}
	}
	if raw, has := m["verify"]; has {
		c, steps, err := parseCheck(raw, w+".verify", hasCtx)
		if err != nil {
			return action{}, nil, err
		}
		act.verify = c
		norm["verify"] = map[string]any{"steps": steps}
	}
	return act, norm, nil
}

func parseTimeWhen(when map[string]any, w string) (*timeSpec, error) {
	_, hasAt := when["at"]
	_, hasAfter := when["after"]
	_, hasEvery := when["every"]
	tm := &timeSpec{hasAfter: hasAfter}
	if !hasAt && !hasAfter && !hasEvery {
		return nil, specErrorf("%s: when.type=='time' needs at least one of 'at', 'after', or 'every'", w)
	}
	if hasAt && hasAfter {
		return nil, specErrorf("%s: when may have at most one of 'at' / 'after'", w)
	}
	if hasAfter {
		after, ok := when["after"].(string)
		if !ok || after == "" {
			return nil, specErrorf("%s: when.after must be a non-empty trigger id", w)
		}
		tm.after = after
		off, ok := when["offset"].(string)
		if !ok || off == "" {
			return nil, specErrorf("%s: when.after requires a non-empty 'offset' duration", w)
		}
		d, err := vclock.ParseDuration(off)
		if err != nil {
			return nil, specErrorf("%s: offset: %v", w, err)
		}
		tm.offset = d
	} else if _, has := when["offset"]; has {
		return nil, specErrorf("%s: 'offset' is only valid with 'after'", w)
	}
	if hasAt {
		ms, err := parseMark(when["at"], w+": at")
		if err != nil {
			return nil, err
		}
		tm.at = ms
	}
	stochastic := false
	if hasEvery {
		switch e := when["every"].(type) {
		case string:
			es, err := parseEveryString(e, w)
			if err != nil {
				return nil, err
			}
			tm.every = es
		case map[string]any:
			stochastic = true
			if d, _ := e["dist"].(string); d != "exp" {
				return nil, specErrorf("%s: every.dist must be 'exp'", w)
			}
			mean, ok := e["mean"].(string)
			if !ok {
				return nil, specErrorf("%s: every.mean must be a positive ISO-8601 duration", w)
			}
			d, err := vclock.ParseDuration(mean)
			if err != nil {
				return nil, specErrorf("%s: every.mean: %v", w, err)
			}
			if d <= 0 {
				return nil, specErrorf("%s: every.mean must be a positive ISO-8601 duration", w)
			}
			n, ok := when["seed"].(json.Number)
			if !ok || !isIntNumber(n) {
				return nil, specErrorf("%s: a stochastic 'every' requires an integer 'seed'", w)
			}
			tm.seed, _ = new(big.Int).SetString(n.String(), 10)
			tm.every = &everySpec{exp: true, mean: d}
		default:
			return nil, specErrorf("%s: every must be a duration string or {dist, mean}", w)
		}
	}
	if _, has := when["seed"]; has && !stochastic {
		return nil, specErrorf("%s: 'seed' is only valid with a stochastic 'every'", w)
	}
	for _, term := range []string{"until", "count"} {
		if _, has := when[term]; has && !hasEvery {
			return nil, specErrorf("%s: '%s' requires a recurring 'every'", w, term)
		}
	}
	if raw, has := when["count"]; has {
		n, ok := raw.(json.Number)
		if !ok || !isIntNumber(n) || strings.HasPrefix(n.String(), "-") || strings.Trim(n.String(), "0") == "" {
			return nil, specErrorf("%s: count must be a positive integer", w)
		}
		c, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			c = math.MaxInt64
		}
		tm.count = c
	}
	if raw, has := when["until"]; has {
		ms, err := parseMark(raw, w+": until")
		if err != nil {
			return nil, err
		}
		tm.until = ms
	}
	return tm, nil
}

// parseMark reads an instant: a string starting with "P" is a duration
// after the clock's t0, anything else must be RFC 3339.
func parseMark(v any, where string) (*markSpec, error) {
	if s, ok := v.(string); ok && strings.HasPrefix(s, "P") {
		d, err := vclock.ParseDuration(s)
		if err != nil {
			return nil, specErrorf("%s: %v", where, err)
		}
		return &markSpec{rel: true, d: d}, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, specErrorf("%s: virtual_time must be an RFC3339 string, got %s", where, pyType(v))
	}
	t, err := vclock.ParseTime("virtual_time", s)
	if err != nil {
		return nil, specErrorf("%s: %v", where, err)
	}
	return &markSpec{abs: t}, nil
}

// cronParser accepts the standard 5-field form, descriptors (@hourly,
// @every 90m) and an optional leading seconds field.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseEveryString reads a fixed interval: an ISO-8601 duration, or (ours)
// a cron expression evaluated on the virtual clock.
func parseEveryString(e, w string) (*everySpec, error) {
	if strings.HasPrefix(e, "P") {
		d, err := vclock.ParseDuration(e)
		if err != nil {
			return nil, specErrorf("%s: every: %v", w, err)
		}
		if d <= 0 {
			return nil, specErrorf("%s: every must be a positive duration", w)
		}
		return &everySpec{fixed: d}, nil
	}
	if strings.HasPrefix(e, "CRON_TZ=") || strings.HasPrefix(e, "TZ=") {
		return nil, specErrorf("%s: every: cron time zones are not supported; virtual time is UTC", w)
	}
	sched, err := cronParser.Parse(e)
	if err != nil {
		return nil, specErrorf("%s: every: %s is neither an ISO-8601 duration (e.g. 'PT30M') nor a cron expression: %v", w, pyQuote(e), err)
	}
	return &everySpec{cron: sched}, nil
}
