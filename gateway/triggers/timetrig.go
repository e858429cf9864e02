package triggers

import (
	"context"
	"fmt"
	"time"

	"github.com/agentenv/agentenv/gateway/vclock"
	"github.com/agentenv/agentenv/protocol"
)

// maxCatchup bounds the marks one evaluation fires; the backlog drains on
// later evaluations.
const maxCatchup = 1000

func (e *Engine) hasTimeLocked() bool {
	for _, t := range e.triggers {
		if t.spec.kind == kindTime && (t.status == protocol.TriggerArmed || t.status == protocol.TriggerFiring) {
			return true
		}
	}
	return false
}

// evalTimeLocked fires the time triggers that are due. It is called
// by the driver and by watched calls; the status guard makes a mark seen by
// both fire once.
func (e *Engine) evalTimeLocked() {
	st := e.clock.State()
	if !st.Armed {
		return
	}
	now := st.Now
	for _, id := range e.order {
		t := e.triggers[id]
		tm := t.spec.tm
		if tm == nil || t.status != protocol.TriggerArmed {
			continue
		}
		if !tm.hasAfter && t.resolved && t.markGen != st.Generation {
			// The old mark and any backlog are on a timeline the new clock
			// never reached.
			var dropped any
			if t.nextMark != nil {
				dropped = vclock.FormatTime(*t.nextMark)
			}
			e.emitLocked(kindReanchored, id, Field{"generation", st.Generation}, Field{"dropped_mark", dropped})
			t.resolved, t.nextMark = false, nil
			if tm.every != nil && tm.every.exp {
				t.rng = newPythonRandom(tm.seed)
			}
		}
		if !t.resolved && !tm.hasAfter {
			e.resolveFirstMarkLocked(t, st.T0)
			t.markGen = st.Generation
		}
		if t.nextMark == nil {
			if t.resolved && !tm.hasAfter {
				t.status = protocol.TriggerFired // no mark at all (an empty cron schedule)
			}
			continue
		}
		if now.Before(*t.nextMark) {
			continue
		}
		marks, capped, terminated := e.advanceMarksLocked(t, now, st.T0)
		if len(marks) == 0 {
			if terminated {
				t.status, t.nextMark = protocol.TriggerFired, nil
			}
			continue
		}
		t.status = protocol.TriggerFiring
		t.detectedAt = e.nowReal()
		e.emitLocked(kindDetected, id, Field{"provoking", []Field{{"source", "clock"}}}, Field{"due", len(marks)},
			Field{"capped", capped}, Field{"first_mark", marks[0]}, Field{"last_mark", marks[len(marks)-1]})
		e.spawn(func() { e.fireTime(t, marks, capped, terminated) })
	}
}

func (e *Engine) resolveFirstMarkLocked(t *trigger, t0 time.Time) {
	tm := t.spec.tm
	t.resolved = true
	var m time.Time
	if tm.at != nil {
		m = tm.at.resolve(t0)
	} else {
		var ok bool
		if m, ok = e.nextAfterLocked(t, t0); !ok {
			t.nextMark = nil
			return
		}
	}
	t.nextMark = &m
}

// nextAfterLocked is the mark one interval after prev.
func (e *Engine) nextAfterLocked(t *trigger, prev time.Time) (time.Time, bool) {
	ev := t.spec.tm.every
	switch {
	case ev.exp:
		mean := ev.mean.Seconds()
		return vclock.Advance(prev, vclock.DurationFromSeconds(t.rng.expovariate(1.0/mean))), true
	case ev.cron != nil:
		n := ev.cron.Next(prev)
		if n.IsZero() || n.After(vclock.MaxInstant) {
			return time.Time{}, false
		}
		return n.UTC(), true
	}
	return vclock.Advance(prev, ev.fixed), true
}

// advanceMarksLocked collects the due marks (at most maxCatchup), moving
// next_mark past them.
func (e *Engine) advanceMarksLocked(t *trigger, now, t0 time.Time) (marks []string, capped, terminated bool) {
	tm := t.spec.tm
	var until *time.Time
	if tm.until != nil {
		u := tm.until.resolve(t0)
		until = &u
	}
	for t.nextMark != nil && !now.Before(*t.nextMark) {
		cur := *t.nextMark
		if until != nil && cur.After(*until) {
			t.nextMark, terminated = nil, true
			break
		}
		marks = append(marks, vclock.FormatTime(cur))
		if tm.every == nil {
			t.nextMark, terminated = nil, true
			break
		}
		if tm.count > 0 && t.fireCount+int64(len(marks)) >= tm.count {
			t.nextMark, terminated = nil, true
			break
		}
		next, ok := e.nextAfterLocked(t, cur)
		if !ok || !next.After(cur) {
			// Saturated at the maximum instant: it can never advance.
			t.nextMark, terminated = nil, true
			break
		}
		t.nextMark = &next
		if len(marks) >= maxCatchup {
			capped = true
			break
		}
	}
	return marks, capped, terminated
}

// Start starts the time-trigger driver; it is idempotent. The driver sleeps
// until the earliest next mark (converted through the clock rate), and is
// re-planned on register, remove, clear, fire completion, clock arm and
// clock clear. While no time trigger is armed it never reads the clock.
func (e *Engine) Start() {
	e.driverMu.Lock()
	defer e.driverMu.Unlock()
	if e.driverCancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(e.baseCtx)
	done := make(chan struct{})
	e.driverCancel, e.driverDone = cancel, done
	go func() {
		defer close(done)
		e.drive(ctx)
	}()
}

// Stop stops the driver and waits for it; it is idempotent and the driver
// may be started again.
func (e *Engine) Stop() {
	e.driverMu.Lock()
	cancel, done := e.driverCancel, e.driverDone
	e.driverCancel, e.driverDone = nil, nil
	e.driverMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (e *Engine) drive(ctx context.Context) {
	for {
		next, active := e.tick()
		var changed <-chan struct{}
		var timer <-chan time.Time
		if active {
			if next != nil {
				d, ok, ch := e.clock.Until(*next)
				changed = ch
				if ok && d <= 0 {
					continue
				}
				if ok {
					timer = e.real.After(d)
				}
			} else {
				changed = e.clock.Changed()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		case <-changed:
		case <-timer:
		}
	}
}

// tick evaluates time triggers and returns the earliest pending mark. A
// failing evaluation is logged and survived.
func (e *Engine) tick() (next *time.Time, active bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.hasTimeLocked() {
		return nil, false
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				e.logger.Error("time-trigger driver tick failed", "panic", fmt.Sprint(r))
			}
		}()
		e.evalTimeLocked()
	}()
	for _, t := range e.triggers {
		if t.spec.kind != kindTime || t.status != protocol.TriggerArmed || t.nextMark == nil {
			continue
		}
		if next == nil || t.nextMark.Before(*next) {
			m := *t.nextMark
			next = &m
		}
	}
	return next, true
}
