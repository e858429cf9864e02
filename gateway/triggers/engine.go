package triggers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentenv/agentenv/gateway/vclock"
	"github.com/agentenv/agentenv/internal/jsonvalue"
	"github.com/agentenv/agentenv/protocol"
)

// DefaultBarrierTimeout bounds a barrier whose timeout_seconds is omitted.
const DefaultBarrierTimeout = 30 * time.Second

// DefaultExecutorTimeout is executor.timeout_seconds' default.
const DefaultExecutorTimeout = 120 * time.Second

// Options configures an Engine. A nil *Options means defaults.
type Options struct {
	// Executor runs nl actions; nil means an A2AExecutor with defaults.
	Executor Executor
	// BarrierTimeout bounds barriers without timeout_seconds; 0 means
	// DefaultBarrierTimeout.
	BarrierTimeout time.Duration
	// Logger receives engine diagnostics; nil means slog.Default().
	Logger *slog.Logger
}

// Engine is the trigger engine. Create it with New, start
// the time driver with Start, stop everything with Close.
type Engine struct {
	host           Host
	clock          *vclock.Virtual
	real           vclock.Clock
	exec           Executor
	barrierTimeout time.Duration
	logger         *slog.Logger

	baseCtx   context.Context
	cancelAll context.CancelFunc
	wg        sync.WaitGroup
	kick      chan struct{}
	unsub     func()

	driverMu     sync.Mutex
	driverCancel context.CancelFunc
	driverDone   chan struct{}

	mu         sync.Mutex
	triggers   map[string]*trigger
	order      []string
	watchRoles []string // sorted
	configSet  bool
	executor   *executorConfig
	log        eventLog
	active     atomic.Bool // len(triggers) > 0, read without the lock
}

type executorConfig struct {
	a2aURL  string
	role    string
	timeout time.Duration
	// timeoutRaw is the normalised timeout_seconds for comparisons.
	timeoutRaw float64
}

// trigger is a registered trigger's runtime state.
type trigger struct {
	spec   *spec
	status string

	detectedAt, firedAt, lastFailureAt *string
	fireCount, failureCount            int64

	pending []*queuedCall // action/state: calls detected while firing

	evaluating    bool // state: a check is running
	evalPending   bool // state: one more evaluation requested meanwhile
	evalProvoking []Field

	resolved bool // time: first mark stamped
	nextMark *time.Time
	markGen  uint64
	rng      *mt19937

	ctx     context.Context
	cancel  context.CancelFunc
	removed bool
}

// queuedCall is one detection waiting to be fired; done is closed when its
// fire settles, which is what a barrier waits for.
type queuedCall struct {
	cc   *callCtx
	done chan struct{}
	once sync.Once
}

func (q *queuedCall) finish() { q.once.Do(func() { close(q.done) }) }

// New returns an engine that reads virtual time from clk and calls back
// into host. It does not start the time driver: call Start.
func New(host Host, clk *vclock.Virtual, opts *Options) *Engine {
	if host == nil || clk == nil {
		panic("triggers.New: host and clock are required")
	}
	e := &Engine{host: host, clock: clk, real: clk.RealClock(), kick: make(chan struct{}, 1), triggers: map[string]*trigger{}}
	if opts != nil {
		e.exec, e.barrierTimeout, e.logger = opts.Executor, opts.BarrierTimeout, opts.Logger
	}
	if e.exec == nil {
		e.exec = NewA2AExecutor(nil)
	}
	if e.barrierTimeout <= 0 {
		e.barrierTimeout = DefaultBarrierTimeout
	}
	if e.logger == nil {
		e.logger = slog.Default()
	}
	e.baseCtx, e.cancelAll = context.WithCancel(context.Background())
	e.unsub = clk.Subscribe(func(vclock.State) { e.poke() })
	return e
}

// Close stops the time driver, cancels in-flight fires and waits for them.
// It is idempotent.
func (e *Engine) Close() {
	e.Stop()
	e.unsub()
	e.cancelAll()
	e.mu.Lock()
	for _, t := range e.triggers {
		t.cancel()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

func (e *Engine) poke() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

func (e *Engine) spawn(fn func()) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		fn()
	}()
}

// Register validates a POST /triggers/register body and adds its triggers
// atomically. A refused body returns a *SpecError (HTTP 400).
func (e *Engine) Register(ctx context.Context, body []byte) (*protocol.TriggersRegistered, error) {
	m, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	watch, err := e.resolveWatchRolesLocked(m["watch_roles"])
	if err != nil {
		return nil, err
	}
	exec, err := e.resolveExecutorLocked(m["executor"], watch)
	if err != nil {
		return nil, err
	}
	list, ok := m["triggers"].([]any)
	if !ok {
		return nil, specErrorf("triggers must be a list")
	}
	discovered := e.host.Discovered()
	var batch []string
	seen := map[string]bool{}
	var toAdd []*spec
	for _, raw := range list {
		obj, ok := raw.(map[string]any)
		if !ok {
			return nil, specErrorf("every trigger needs a non-empty string id")
		}
		obj = cloneMap(obj)
		var id string
		switch x := obj["id"].(type) {
		case nil:
			id = "trg_" + randomHex(6)
			obj["id"] = id
		case string:
			id = x
		}
		if id == "" {
			return nil, specErrorf("every trigger needs a non-empty string id")
		}
		if seen[id] {
			return nil, specErrorf("trigger '%s': duplicate id", id)
		}
		seen[id] = true
		batch = append(batch, id)
		s, err := parseSpec(obj, id, exec)
		if err != nil {
			return nil, err
		}
		if discovered {
			if err := e.checkToolsKnown(s); err != nil {
				return nil, err
			}
		}
		if old := e.triggers[id]; old != nil {
			if old.spec.canon != s.canon {
				return nil, specErrorf("trigger '%s': already registered with a different spec — remove it first or use a new id", id)
			}
			continue
		}
		toAdd = append(toAdd, s)
	}
	e.watchRoles, e.executor, e.configSet = watch, exec, true
	for _, s := range toAdd {
		t := &trigger{spec: s, status: protocol.TriggerArmed}
		t.ctx, t.cancel = context.WithCancel(e.baseCtx)
		if s.tm != nil && s.tm.every != nil && s.tm.every.exp {
			t.rng = newPythonRandom(s.tm.seed)
		}
		e.triggers[s.id] = t
		e.order = append(e.order, s.id)
		e.emitLocked(kindAdded, s.id)
	}
	e.active.Store(len(e.triggers) > 0)
	e.poke()
	return &protocol.TriggersRegistered{OK: true, Added: nonNil(batch), All: append([]string{}, e.order...)}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func pyList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = pyQuote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func (e *Engine) resolveWatchRolesLocked(raw any) ([]string, error) {
	if raw == nil {
		if e.configSet {
			return e.watchRoles, nil
		}
		return []string{protocol.DefaultRole}, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, specErrorf("watch_roles must be a list of non-empty strings")
	}
	set := map[string]bool{}
	for _, r := range list {
		s, ok := r.(string)
		if !ok || s == "" {
			return nil, specErrorf("watch_roles must be a list of non-empty strings")
		}
		set[s] = true
	}
	roles := sortedKeys(set)
	if e.configSet && strings.Join(roles, "\x00") != strings.Join(e.watchRoles, "\x00") {
		return nil, specErrorf("watch_roles %s conflicts with the already-registered %s — clear to change it", pyList(roles), pyList(e.watchRoles))
	}
	return roles, nil
}

func (e *Engine) resolveExecutorLocked(raw any, watch []string) (*executorConfig, error) {
	if raw == nil {
		return e.executor, nil
	}
	m, ok := raw.(map[string]any)
	url, _ := m["a2a_url"].(string)
	if !ok || url == "" {
		return nil, specErrorf("executor.a2a_url must be a non-empty string")
	}
	role, ok := m["role"].(string)
	if !ok || role == "" {
		return nil, specErrorf("executor.role must be a non-empty string (the deployed executor's AgentEnv-Role, kept out of watch_roles so its own tool calls never fire triggers)")
	}
	for _, w := range watch {
		if w == role {
			return nil, specErrorf("executor.role %s must not be in watch_roles %s — the executor's own tool calls would fire triggers (cascade)", pyQuote(role), pyList(watch))
		}
	}
	cfg := &executorConfig{a2aURL: strings.TrimRight(url, "/"), role: role, timeout: DefaultExecutorTimeout, timeoutRaw: 120}
	if t, has := m["timeout_seconds"]; has && t != nil {
		n, ok := t.(json.Number)
		f, err := strconv.ParseFloat(string(n), 64)
		if !ok || err != nil || !(f > 0) || f > 1e9 {
			return nil, specErrorf("executor.timeout_seconds must be a positive number of seconds (got %s)", pyRepr(t))
		}
		cfg.timeout, cfg.timeoutRaw = secondsToDuration(f), f
	}
	if e.executor != nil && *e.executor != *cfg {
		return nil, specErrorf("executor conflicts with the already-registered executor — clear to change it")
	}
	return cfg, nil
}

func (e *Engine) checkToolsKnown(s *spec) error {
	type named struct{ tool, where string }
	var names []named
	switch s.kind {
	case kindAction:
		names = append(names, named{s.tool, "when.tool"})
	case kindState:
		for _, st := range s.check.steps {
			names = append(names, named{st.tool, "when.check"})
		}
	}
	for i, a := range s.actions {
		if a.typ == actTool {
			names = append(names, named{a.tool, fmt.Sprintf("actions[%d].tool", i)})
		}
		if a.verify != nil {
			for _, st := range a.verify.steps {
				names = append(names, named{st.tool, fmt.Sprintf("actions[%d].verify", i)})
			}
		}
	}
	for _, n := range names {
		if _, ok := e.host.LookupTool(n.tool); !ok {
			return specErrorf("trigger '%s': %s names unknown tool %s", s.id, n.where, pyQuote(n.tool))
		}
	}
	return nil
}

// Remove handles POST /triggers/remove: ids is the raw "ids" value.
func (e *Engine) Remove(ctx context.Context, body []byte) (*protocol.TriggersRemoved, error) {
	m, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	list, ok := m["ids"].([]any)
	var ids []string
	for _, x := range list {
		s, isStr := x.(string)
		if !isStr || s == "" {
			ok = false
			break
		}
		ids = append(ids, s)
	}
	if !ok {
		return nil, specErrorf("ids must be a list of non-empty strings")
	}
	return &protocol.TriggersRemoved{OK: true, Removed: e.RemoveIDs(ids)}, nil
}

// RemoveIDs removes triggers by id, cancelling their in-flight fires, and
// returns the ids that existed. Unknown ids are ignored.
func (e *Engine) RemoveIDs(ids []string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	removed := []string{}
	for _, id := range ids {
		t := e.triggers[id]
		if t == nil {
			continue
		}
		e.retireLocked(t)
		delete(e.triggers, id)
		for i, o := range e.order {
			if o == id {
				e.order = append(e.order[:i:i], e.order[i+1:]...)
				break
			}
		}
		removed = append(removed, id)
		e.emitLocked(kindRemoved, id)
	}
	e.active.Store(len(e.triggers) > 0)
	e.poke()
	return removed
}

func (e *Engine) retireLocked(t *trigger) {
	t.removed = true
	t.cancel()
	for _, q := range t.pending {
		q.finish()
	}
	t.pending = nil
}

// Clear handles POST /triggers/clear: cancels in-flight fires and wipes
// triggers, the log, the sequence counter, watch_roles and the executor.
func (e *Engine) Clear() *protocol.TriggersCleared {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range e.triggers {
		e.retireLocked(t)
	}
	e.triggers = map[string]*trigger{}
	e.order = nil
	e.log = eventLog{}
	e.watchRoles, e.executor, e.configSet = nil, nil, false
	e.active.Store(false)
	e.poke()
	return &protocol.TriggersCleared{OK: true}
}

// State returns the GET /triggers/state body.
func (e *Engine) State() *protocol.TriggersState {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := &protocol.TriggersState{
		Config:   protocol.TriggersConfig{WatchRoles: append([]string{}, e.watchRoles...), ExecutorConfigured: e.executor != nil},
		Triggers: []protocol.TriggerStatus{},
		Events:   e.log.all(),
	}
	st.EventsDropped = e.log.dropped()
	for _, id := range e.order {
		t := e.triggers[id]
		ts := protocol.TriggerStatus{
			ID: id, Type: t.spec.kind, When: t.spec.whenEcho, Status: t.status,
			DetectedAt: t.detectedAt, FiredAt: t.firedAt, FireCount: t.fireCount,
			FailureCount: t.failureCount, LastFailureAt: t.lastFailureAt,
			Barrier: t.spec.barrierRaw, Pending: len(t.pending),
		}
		if ts.Barrier == nil {
			ts.Barrier = json.RawMessage("null")
		}
		if t.nextMark != nil {
			s := vclock.FormatTime(*t.nextMark)
			ts.NextMark = &s
		}
		st.Triggers = append(st.Triggers, ts)
	}
	return st
}

func (e *Engine) nowReal() *string {
	s := vclock.FormatReal(e.real.Now())
	return &s
}

func inFlight(status string) bool {
	return status == protocol.TriggerFiring || status == protocol.TriggerQueued
}

// AfterToolCall feeds a completed external call to the engine and
// returns the barrier the caller must wait on before answering (nil when no
// barrier applies; Wait on a nil *Barrier returns at once).
func (e *Engine) AfterToolCall(ctx context.Context, call ToolCall) *Barrier {
	if !e.active.Load() {
		return nil // no triggers: the common case costs one atomic load
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.executor != nil && call.Role == e.executor.role {
		return nil
	}
	watched := false
	for _, r := range e.watchRoles {
		if r == call.Role {
			watched = true
		}
	}
	if !watched || len(e.triggers) == 0 {
		return nil
	}
	if e.hasTimeLocked() {
		e.evalTimeLocked()
	}
	if call.IsError {
		return nil
	}
	var cc *callCtx // decoded only when an action trigger names this tool
	provoking := []Field{{"tool", call.Tool}, {"role", call.Role}}
	var b *Barrier
	for _, id := range e.order {
		t := e.triggers[id]
		s := t.spec
		if s.kind != kindAction || s.tool != call.Tool {
			continue
		}
		if t.status != protocol.TriggerArmed && !(s.repeat && inFlight(t.status)) {
			continue
		}
		if cc == nil {
			cc = &callCtx{result: resultData(call.Result)}
			if len(call.Args) == 0 {
				cc.args = map[string]any{}
			} else if v, err := jsonvalue.Decode(call.Args); err == nil {
				cc.args = v
			}
		}
		match := true
		for _, w := range s.where {
			if !w.pred.eval(w.value(cc)) {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		q := e.detectLocked(t, provoking, cc)
		if s.barrier != nil {
			if b == nil {
				b = &Barrier{e: e}
			}
			b.add(id, q.done, s.barrier, e.barrierTimeout)
		}
	}
	info, _ := e.host.LookupTool(call.Tool)
	if !info.ReadOnly {
		for _, id := range e.order {
			t := e.triggers[id]
			if t.spec.kind != kindState || t.status != protocol.TriggerArmed {
				continue
			}
			t.evalProvoking = provoking
			if t.evaluating {
				t.evalPending = true
				continue
			}
			t.evaluating = true
			e.spawn(func() { e.evalState(t) })
		}
	}
	return b
}

// detectLocked records a detection: it starts a fire, or queues the call
// behind the running one.
func (e *Engine) detectLocked(t *trigger, provoking []Field, cc *callCtx) *queuedCall {
	q := &queuedCall{cc: cc, done: make(chan struct{})}
	if inFlight(t.status) {
		t.pending = append(t.pending, q)
		t.status = protocol.TriggerQueued
		e.emitLocked(kindDetected, t.spec.id, Field{"provoking", provoking}, Field{"queued", len(t.pending)})
		return q
	}
	t.status = protocol.TriggerFiring
	t.detectedAt = e.nowReal()
	e.emitLocked(kindDetected, t.spec.id, Field{"provoking", provoking})
	e.spawn(func() { e.fire(t, q) })
	return q
}

// decodeObject decodes a control-route body that must be a JSON object,
// refusing anything else with the reference's messages.
func decodeObject(body []byte) (map[string]any, error) {
	v, err := jsonvalue.Decode(body)
	if err != nil {
		return nil, &SpecError{Msg: "Invalid JSON body"}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &SpecError{Msg: "body must be a JSON object"}
	}
	return m, nil
}
