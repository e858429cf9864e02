package vclock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
)

// Clock is the source of real time. System is the production one; inside a
// testing/synctest bubble System is already virtualised by the runtime, so
// tests rarely need another implementation.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// System reads the process clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (System) After(d time.Duration) <-chan time.Time { return time.After(d) }

// ErrNotArmed is returned by reads of an unarmed clock.
var ErrNotArmed = errors.New("clock not armed")

// ValidationError is a refused set-time; Error() is the message the HTTP
// route returns with status 400.
type ValidationError struct{ Msg string }

func (e *ValidationError) Error() string { return e.Msg }

func invalid(format string, args ...any) error {
	return &ValidationError{Msg: fmt.Sprintf(format, args...)}
}

// Options configures a Virtual clock. A nil *Options means defaults.
type Options struct {
	// Clock is the real time source; nil means System.
	Clock Clock
}

// State is a snapshot of the clock. T0, Rate, Anchor and Now are meaningful
// only when Armed.
type State struct {
	Armed bool
	// T0 is the virtual instant of the arm, Anchor the real instant.
	T0     time.Time
	Anchor time.Time
	Rate   float64
	// Now is the virtual time when the snapshot was taken.
	Now time.Time
	// Generation is bumped by every arm and every clear.
	Generation uint64
}

// Virtual is the gateway's virtual clock. It is safe for concurrent use.
type Virtual struct {
	src Clock

	mu      sync.Mutex
	armed   bool
	t0      time.Time
	anchor  time.Time
	rate    float64
	gen     uint64
	changed chan struct{}
	subs    map[int]func(State)
	nextSub int
}

// New returns an unarmed clock.
func New(opts *Options) *Virtual {
	v := &Virtual{src: System{}, changed: make(chan struct{}), subs: map[int]func(State){}}
	if opts != nil && opts.Clock != nil {
		v.src = opts.Clock
	}
	return v
}

// RealClock returns the real time source the clock reads.
func (v *Virtual) RealClock() Clock { return v.src }

// SetTime validates the raw JSON values of a set-time body (either may be
// nil for "absent") and arms the clock. A refused set leaves the clock
// untouched and returns a *ValidationError.
func (v *Virtual) SetTime(virtualTime, rate json.RawMessage) (State, error) {
	t0, err := ParseTimeJSON("virtual_time", virtualTime)
	if err != nil {
		return State{}, err
	}
	r, err := ParseRate(rate)
	if err != nil {
		return State{}, err
	}
	return v.Arm(t0, r)
}

// ParseTimeJSON decodes a JSON string holding a strict RFC 3339 instant.
func ParseTimeJSON(field string, raw json.RawMessage) (time.Time, error) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return time.Time{}, invalid("%s must be an RFC3339 string, got %s", field, PyType(raw))
	}
	t, err := ParseTime(field, s)
	if err != nil {
		return time.Time{}, &ValidationError{Msg: err.Error()}
	}
	return t, nil
}

// ParseRate decodes virtual_seconds_per_real_second: a JSON number (not a
// bool), finite, 0 ≤ rate ≤ 86400; absent or null means 1.0.
func ParseRate(raw json.RawMessage) (float64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 1, nil
	}
	if t := PyType(raw); t != "int" && t != "float" {
		return 0, invalid("rate must be a number, got %s", t)
	}
	r, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(r, 0) || math.IsNaN(r) {
		return 0, invalid("rate must be a finite number, got %s", raw)
	}
	if r < 0 {
		return 0, invalid("rate must be non-negative")
	}
	if r > MaxRate {
		return 0, invalid("rate %s exceeds max %g (1 real s = 1 virtual day)", strconv.FormatFloat(r, 'g', -1, 64), MaxRate)
	}
	return r, nil
}

// PyType names the JSON value's type the way the reference's messages do
// (Python type names).
func PyType(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "NoneType"
	}
	switch raw[0] {
	case 'n':
		return "NoneType"
	case 't', 'f':
		return "bool"
	case '"':
		return "str"
	case '[':
		return "list"
	case '{':
		return "dict"
	}
	for _, c := range raw {
		if c == '.' || c == 'e' || c == 'E' {
			return "float"
		}
	}
	return "int"
}

// Arm (re-)arms the clock at virtual t0 advancing at rate. t0 must lie at
// least one real day of advancement (86400 × rate seconds) before
// MaxInstant; a frozen clock may sit at the maximum.
func (v *Virtual) Arm(t0 time.Time, rate float64) (State, error) {
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 || rate > MaxRate {
		return State{}, invalid("rate must be a finite number in [0, %g], got %v", MaxRate, rate)
	}
	t0 = t0.UTC().Truncate(time.Microsecond)
	if t0.Before(MinInstant) || t0.After(MaxInstant) {
		return State{}, invalid("virtual_time %s is out of representable range", FormatTime(t0))
	}
	horizon := DurationFromSeconds(86400 * rate)
	if Advance(MaxInstant, -horizon).Before(t0) {
		return State{}, invalid("virtual_time '%s' at rate %s would overflow datetime near the max", FormatTime(t0), strconv.FormatFloat(rate, 'g', -1, 64))
	}
	v.mu.Lock()
	v.armed, v.t0, v.anchor, v.rate = true, t0, v.src.Now(), rate
	st := v.bumpLocked()
	subs := v.subscribersLocked()
	v.mu.Unlock()
	for _, fn := range subs {
		fn(st)
	}
	return st, nil
}

// Clear disarms the clock (idempotent; every call bumps the generation).
func (v *Virtual) Clear() State {
	v.mu.Lock()
	v.armed, v.t0, v.anchor, v.rate = false, time.Time{}, time.Time{}, 1
	st := v.bumpLocked()
	subs := v.subscribersLocked()
	v.mu.Unlock()
	for _, fn := range subs {
		fn(st)
	}
	return st
}

func (v *Virtual) bumpLocked() State {
	v.gen++
	close(v.changed)
	v.changed = make(chan struct{})
	return v.stateLocked()
}

func (v *Virtual) subscribersLocked() []func(State) {
	keys := make([]int, 0, len(v.subs))
	for k := range v.subs {
		keys = append(keys, k)
	}
	// Registration order: keys are increasing integers.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	out := make([]func(State), len(keys))
	for i, k := range keys {
		out[i] = v.subs[k]
	}
	return out
}

// Subscribe registers fn to be called after every arm and clear, with the
// new state, synchronously and in registration order, outside the clock's
// lock. The returned function unsubscribes.
func (v *Virtual) Subscribe(fn func(State)) (unsubscribe func()) {
	v.mu.Lock()
	id := v.nextSub
	v.nextSub++
	v.subs[id] = fn
	v.mu.Unlock()
	return func() {
		v.mu.Lock()
		delete(v.subs, id)
		v.mu.Unlock()
	}
}

// Changed returns a channel closed at the next arm or clear.
func (v *Virtual) Changed() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.changed
}

// Now returns the virtual time, or false when unarmed.
func (v *Virtual) Now() (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.armed {
		return time.Time{}, false
	}
	return v.nowLocked(), true
}

// T0 returns the anchor instant of the current arm, or false when unarmed.
func (v *Virtual) T0() (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.t0, v.armed
}

// Generation returns the number of arms and clears so far.
func (v *Virtual) Generation() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.gen
}

// State returns a snapshot.
func (v *Virtual) State() State {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.stateLocked()
}

func (v *Virtual) stateLocked() State {
	if !v.armed {
		return State{Generation: v.gen}
	}
	return State{Armed: true, T0: v.t0, Anchor: v.anchor, Rate: v.rate, Now: v.nowLocked(), Generation: v.gen}
}

func (v *Virtual) nowLocked() time.Time {
	elapsed := v.src.Now().Sub(v.anchor)
	if elapsed <= 0 || v.rate == 0 {
		return v.t0
	}
	return Advance(v.t0, DurationFromSeconds(elapsed.Seconds()*v.rate))
}

// RealInstant returns the real instant at which the current arm reaches
// virtual t (t before T0 maps before the anchor); false when unarmed or
// frozen.
func (v *Virtual) RealInstant(t time.Time) (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.armed || v.rate == 0 {
		return time.Time{}, false
	}
	d := Sub(t, v.t0)
	return v.anchor.Add(realDuration(d, v.rate)), true
}

func realDuration(d Duration, rate float64) time.Duration {
	ns := math.Ceil(float64(d) * 1000 / rate)
	if ns >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	if ns <= math.MinInt64 {
		return time.Duration(math.MinInt64)
	}
	return time.Duration(ns)
}

// Until reports how long, in real time, until the clock reaches virtual t.
// ok is false when the clock is unarmed or frozen short of t (no amount of
// waiting gets there); changed is closed at the next arm or clear, which
// invalidates the answer.
func (v *Virtual) Until(t time.Time) (d time.Duration, ok bool, changed <-chan struct{}) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.armed {
		return 0, false, v.changed
	}
	now := v.nowLocked()
	if !now.Before(t) {
		return 0, true, v.changed
	}
	if v.rate == 0 {
		return 0, false, v.changed
	}
	return realDuration(Sub(t, now), v.rate), true, v.changed
}

// SleepUntil blocks until the clock reads at least t, re-planning whenever
// the clock is re-armed or cleared (an unarmed or frozen clock waits for
// the next arm). It returns nil when t is reached, or ctx.Err().
func (v *Virtual) SleepUntil(ctx context.Context, t time.Time) error {
	for {
		d, ok, changed := v.Until(t)
		if ok && d <= 0 {
			return nil
		}
		var timer <-chan time.Time
		if ok {
			timer = v.src.After(d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-timer:
		}
	}
}
