package agentsdk

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentenv/agentenv/protocol"
)

// Triggers (agent side): deterministic user-sim
// turns. A user-simulator agent implements TriggerHost to serve them.

// TriggerHost is implemented by agents that serve the triggers extension
// (user simulators): when HostsTriggers returns true the card advertises
// urn:agentenv:triggers/v1 and /ext/triggers is served.
type TriggerHost interface {
	HostsTriggers() bool
}

// Limits of the triggers extension.
const (
	maxTriggers        = 256
	maxTriggerContexts = 1024
	maxFiringLog       = 1024
	maxTriggerID       = 128
	maxContextID       = 256
	maxEnvID           = 256
	maxStatus          = 128
	maxRegex           = 4096
	maxSpecBytes       = 16 << 10
	maxSolverMessage   = 200000
	maxSayText         = 8192
	defaultRegexBudget = time.Second
)

type trigger struct {
	id      string
	once    bool
	when    *predicate
	actions []triggerAction
	spec    []byte // canonical JSON of the spec, for idempotent re-registration
}

type triggerAction struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

type predicate struct {
	Type      string
	Turn      int
	Cmp       string
	EnvID     string
	TriggerID string
	Status    string
	Regex     *regexp.Regexp
	Equals    *string
	Exists    *bool
	Of        []*predicate
}

type triggerContext struct {
	lastTurn int
	fired    map[string]bool
}

type triggerState struct {
	mu       sync.Mutex
	list     []*trigger
	byID     map[string]*trigger
	contexts map[string]*triggerContext
	log      []map[string]any
	seq      int
	budget   time.Duration
	now      func() time.Time
}

func newTriggerState() *triggerState {
	return &triggerState{byID: map[string]*trigger{}, contexts: map[string]*triggerContext{},
		budget: defaultRegexBudget, now: time.Now}
}

func (s *triggerState) logLocked(entry map[string]any) {
	s.seq++
	entry["seq"] = s.seq
	entry["ts"] = s.now().UTC().Format(time.RFC3339Nano)
	s.log = append(s.log, entry)
	if len(s.log) > maxFiringLog {
		s.log = s.log[len(s.log)-maxFiringLog:]
	}
}

// parseTrigger validates one trigger spec.
func parseTrigger(raw json.RawMessage, i int) (*trigger, error) {
	at := func(err error) error { return fmt.Errorf("triggers[%d].%w", i, err) }
	if len(raw) > maxSpecBytes {
		return nil, fmt.Errorf("triggers[%d]: spec is larger than 16 KiB", i)
	}
	var w struct {
		ID      *string           `json:"id"`
		Once    *bool             `json:"once"`
		When    json.RawMessage   `json:"when"`
		Actions []json.RawMessage `json:"actions"`
	}
	if err := decodeStrict(raw, &w); err != nil {
		return nil, fmt.Errorf("triggers[%d]: %w", i, err)
	}
	t := &trigger{once: true}
	if w.ID != nil {
		if *w.ID == "" || len(*w.ID) > maxTriggerID {
			return nil, at(errors.New("id: must be 1 to 128 characters"))
		}
		t.id = *w.ID
	}
	if w.Once != nil {
		t.once = *w.Once
	}
	if w.When == nil {
		return nil, at(errors.New("when: required"))
	}
	p, err := parsePredicate(w.When, "when", 0)
	if err != nil {
		return nil, at(err)
	}
	t.when = p
	if len(w.Actions) == 0 {
		return nil, at(errors.New("actions: at least one action is required"))
	}
	for j, ra := range w.Actions {
		var a triggerAction
		if err := decodeStrict(ra, &a); err != nil {
			return nil, at(fmt.Errorf("actions[%d]: %w", j, err))
		}
		switch a.Type {
		case "say":
			if n := utf8.RuneCountInString(a.Text); n < 1 || n > maxSayText {
				return nil, at(fmt.Errorf("actions[%d].text: must be 1 to 8192 characters", j))
			}
		case "end":
			if a.Text != "" {
				return nil, at(fmt.Errorf("actions[%d].text: not allowed on end", j))
			}
		default:
			return nil, at(fmt.Errorf("actions[%d].type: must be say or end", j))
		}
		t.actions = append(t.actions, a)
	}
	canon := map[string]any{"once": t.once, "when": json.RawMessage(w.When), "actions": w.Actions}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(canon)
	var norm any
	_ = json.Unmarshal(buf.Bytes(), &norm)
	t.spec, _ = json.Marshal(norm)
	return t, nil
}

func parsePredicate(raw json.RawMessage, path string, depth int) (*predicate, error) {
	if depth > 16 {
		return nil, fmt.Errorf("%s: nested too deeply", path)
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || raw[0] != '{' {
		return nil, fmt.Errorf("%s: must be an object with a type", path)
	}
	p := &predicate{Type: head.Type}
	switch head.Type {
	case "step":
		var w struct {
			Type string  `json:"type"`
			Turn *int    `json:"turn"`
			Cmp  *string `json:"cmp"`
		}
		if err := decodeStrict(raw, &w); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if w.Turn == nil || *w.Turn < 1 {
			return nil, fmt.Errorf("%s.turn: must be an integer ≥ 1", path)
		}
		p.Turn, p.Cmp = *w.Turn, "eq"
		if w.Cmp != nil {
			if *w.Cmp != "eq" && *w.Cmp != "gte" {
				return nil, fmt.Errorf("%s.cmp: must be eq or gte", path)
			}
			p.Cmp = *w.Cmp
		}
	case "env_trigger":
		var w struct {
			Type      string `json:"type"`
			EnvID     string `json:"env_id"`
			TriggerID string `json:"trigger_id"`
			Status    string `json:"status"`
		}
		if err := decodeStrict(raw, &w); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		switch {
		case w.EnvID == "" || len(w.EnvID) > maxEnvID:
			return nil, fmt.Errorf("%s.env_id: must be 1 to 256 characters", path)
		case w.TriggerID == "" || len(w.TriggerID) > maxTriggerID:
			return nil, fmt.Errorf("%s.trigger_id: must be 1 to 128 characters", path)
		case w.Status != "fired":
			return nil, fmt.Errorf(`%s.status: must be "fired"`, path)
		}
		p.EnvID, p.TriggerID, p.Status = w.EnvID, w.TriggerID, w.Status
	case "conversational":
		var w struct {
			Type  string `json:"type"`
			Where struct {
				Message json.RawMessage `json:"message"`
			} `json:"where"`
		}
		if err := decodeStrict(raw, &w); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var m struct {
			Regex  *string `json:"regex"`
			Equals *string `json:"equals"`
			Exists *bool   `json:"exists"`
		}
		if w.Where.Message == nil || decodeStrict(w.Where.Message, &m) != nil {
			return nil, fmt.Errorf("%s.where.message: must be an object with one of regex, equals, exists", path)
		}
		n := 0
		for _, set := range []bool{m.Regex != nil, m.Equals != nil, m.Exists != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return nil, fmt.Errorf("%s.where.message: set exactly one of regex, equals, exists", path)
		}
		if m.Regex != nil {
			if len(*m.Regex) > maxRegex {
				return nil, fmt.Errorf("%s.where.message.regex: longer than 4096 characters", path)
			}
			re, err := regexp.Compile(*m.Regex)
			if err != nil {
				return nil, fmt.Errorf("%s.where.message.regex: invalid regular expression", path)
			}
			p.Regex = re
		}
		p.Equals, p.Exists = m.Equals, m.Exists
	case "all", "any":
		var w struct {
			Type string            `json:"type"`
			Of   []json.RawMessage `json:"of"`
		}
		if err := decodeStrict(raw, &w); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(w.Of) == 0 {
			return nil, fmt.Errorf("%s.of: at least one predicate is required", path)
		}
		for i, sub := range w.Of {
			sp, err := parsePredicate(sub, fmt.Sprintf("%s.of[%d]", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			p.Of = append(p.Of, sp)
		}
	default:
		return nil, fmt.Errorf("%s.type: must be step, env_trigger, conversational, all or any", path)
	}
	return p, nil
}

func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" { // the value itself is not an object
				return errors.New("must be a JSON object")
			}
			return fmt.Errorf("%s: wrong type", te.Field)
		}
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			return errors.New("unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return errors.New("must be a JSON object")
	}
	return nil
}

type decideInput struct {
	turn        int
	message     string
	envTriggers map[string]map[string]string
}

// errRegexBudget aborts a decision whose regexes ran out of time.
var errRegexBudget = errors.New("regex budget exhausted")

func (p *predicate) eval(in *decideInput, deadline time.Time) (bool, error) {
	switch p.Type {
	case "step":
		if p.Cmp == "gte" {
			return in.turn >= p.Turn, nil
		}
		return in.turn == p.Turn, nil
	case "env_trigger":
		return in.envTriggers[p.EnvID][p.TriggerID] == p.Status, nil
	case "conversational":
		switch {
		case p.Regex != nil:
			if !time.Now().Before(deadline) {
				return false, errRegexBudget
			}
			ok := p.Regex.MatchString(in.message)
			if !time.Now().Before(deadline) {
				return false, errRegexBudget
			}
			return ok, nil
		case p.Equals != nil:
			return in.message == *p.Equals, nil
		default:
			return (in.message != "") == *p.Exists, nil
		}
	}
	// all / any: evaluate every branch (a decision evaluates every predicate).
	all, any := true, false
	for _, sub := range p.Of {
		ok, err := sub.eval(in, deadline)
		if err != nil {
			return false, err
		}
		all, any = all && ok, any || ok
	}
	if p.Type == "all" {
		return all, nil
	}
	return any, nil
}

func (s *Server) triggersExtension() *extension {
	st := s.triggers
	return &extension{
		uri:         protocol.URITriggers,
		description: "Deterministic user-simulator turns: register triggers, decide a turn, read the firing log.",
		endpoint:    "/ext/triggers",
		methods: []*extMethod{
			{
				name: "register", verb: http.MethodPost,
				request:  fields([]string{"triggers"}, nil),
				response: fields([]string{"ok", "added", "all"}, nil),
				handle: func(_ *http.Request, body []byte) (any, error) {
					var w struct {
						Triggers []json.RawMessage `json:"triggers"`
					}
					if err := decodeStrict(body, &w); err != nil || w.Triggers == nil {
						return nil, badRequest(errors.New("triggers: required array of trigger specs"))
					}
					parsed := make([]*trigger, len(w.Triggers))
					for i, raw := range w.Triggers {
						t, err := parseTrigger(raw, i)
						if err != nil {
							return nil, badRequest(err)
						}
						parsed[i] = t
					}
					return st.register(parsed)
				},
			},
			{
				name: "decide", verb: http.MethodPost, path: "/ext/triggers/decide",
				request:  fields([]string{"turn"}, []string{"solver_message", "context_id", "env_triggers"}),
				response: fields([]string{"parts", "done", "fired"}, nil),
				handle: func(_ *http.Request, body []byte) (any, error) {
					var w struct {
						Turn          json.RawMessage              `json:"turn"`
						SolverMessage *string                      `json:"solver_message"`
						ContextID     *string                      `json:"context_id"`
						EnvTriggers   map[string]map[string]string `json:"env_triggers"`
					}
					if err := decodeStrict(body, &w); err != nil {
						return nil, badRequest(err)
					}
					turn, err := strictPositiveInt(bytes.TrimSpace(w.Turn))
					if err != nil {
						return nil, badRequest(errors.New("turn: must be an integer ≥ 1"))
					}
					in := &decideInput{turn: turn, envTriggers: w.EnvTriggers}
					if w.SolverMessage != nil {
						if utf8.RuneCountInString(*w.SolverMessage) > maxSolverMessage {
							return nil, badRequest(errors.New("solver_message: longer than 200000 characters"))
						}
						in.message = *w.SolverMessage
					}
					ctxID := "default"
					if w.ContextID != nil {
						if *w.ContextID == "" || len(*w.ContextID) > maxContextID {
							return nil, badRequest(errors.New("context_id: must be 1 to 256 characters"))
						}
						ctxID = *w.ContextID
					}
					for env, m := range w.EnvTriggers {
						if len(env) > maxEnvID {
							return nil, badRequest(errors.New("env_triggers: env id longer than 256 characters"))
						}
						for id, status := range m {
							if len(id) > maxTriggerID || len(status) > maxStatus {
								return nil, badRequest(errors.New("env_triggers: trigger id or status too long"))
							}
						}
					}
					return st.decide(ctxID, in)
				},
			},
			{
				name: "state", verb: http.MethodGet,
				response: fields([]string{"triggers", "firing_log"}, nil),
				handle: func(r *http.Request, _ []byte) (any, error) {
					if err := bodyless(r.URL.Query()); err != nil {
						return nil, err
					}
					return st.state(), nil
				},
			},
		},
	}
}

func (s *triggerState) register(ts []*trigger) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var fresh []*trigger
	for _, t := range ts {
		if t.id == "" {
			var b [6]byte
			_, _ = rand.Read(b[:])
			t.id = "trg_" + hex.EncodeToString(b[:])
		}
		if seen[t.id] {
			return nil, badRequest(fmt.Errorf("trigger %s: listed twice", t.id))
		}
		seen[t.id] = true
		if old, ok := s.byID[t.id]; ok {
			if !reflect.DeepEqual(old.spec, t.spec) {
				return nil, badRequest(fmt.Errorf("trigger %s: already registered with a different spec", t.id))
			}
			continue
		}
		fresh = append(fresh, t)
	}
	if len(s.list)+len(fresh) > maxTriggers {
		return nil, badRequest(errors.New("triggers: more than 256 triggers"))
	}
	added := []string{}
	for _, t := range fresh {
		s.list = append(s.list, t)
		s.byID[t.id] = t
		added = append(added, t.id)
		s.logLocked(map[string]any{"kind": "registered", "id": t.id})
	}
	all := make([]string, len(s.list))
	for i, t := range s.list {
		all[i] = t.id
	}
	return map[string]any{"ok": true, "added": added, "all": all}, nil
}

func (s *triggerState) decide(ctxID string, in *decideInput) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, known := s.contexts[ctxID]
	if !known && len(s.contexts) >= maxTriggerContexts {
		return nil, badRequest(errors.New("context_id: too many contexts"))
	}
	reset := known && in.turn <= c.lastTurn
	fired := map[string]bool{}
	if known && !reset {
		fired = c.fired
	}
	deadline := time.Now().Add(s.budget)
	var firing []*trigger
	for _, t := range s.list {
		ok, err := t.when.eval(in, deadline)
		if err != nil {
			return nil, &httpError{http.StatusGatewayTimeout, "regex evaluation exceeded its time budget"}
		}
		if ok && !(t.once && fired[t.id]) {
			firing = append(firing, t)
		}
	}
	// Commit: every predicate has been evaluated.
	if reset {
		s.logLocked(map[string]any{"kind": "reset", "context_id": ctxID, "turn": in.turn})
	}
	next := map[string]bool{}
	for k := range fired {
		next[k] = true
	}
	var texts []string
	done := false
	ids := []string{}
	for _, t := range firing {
		next[t.id] = true
		ids = append(ids, t.id)
		for _, a := range t.actions {
			if a.Type == "say" {
				texts = append(texts, a.Text)
			} else {
				done = true
			}
		}
		s.logLocked(map[string]any{"kind": "fired", "id": t.id, "context_id": ctxID, "turn": in.turn})
	}
	s.contexts[ctxID] = &triggerContext{lastTurn: in.turn, fired: next}
	parts := []protocol.Part{}
	if len(texts) > 0 {
		parts = append(parts, protocol.TextPart(strings.Join(texts, "\n")))
	}
	return map[string]any{"parts": parts, "done": done, "fired": ids}, nil
}

func (s *triggerState) state() any {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := make([]map[string]any, len(s.list))
	for i, t := range s.list {
		ts[i] = map[string]any{"id": t.id, "when_type": t.when.Type, "once": t.once}
	}
	log := make([]map[string]any, len(s.log))
	copy(log, s.log)
	return map[string]any{"triggers": ts, "firing_log": log}
}
