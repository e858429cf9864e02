package triggers

import (
	"encoding/json"
	"log/slog"

	"github.com/agentenv/agentenv/gateway/vclock"
)

// The firing log: in memory, the first eventsHead events
// plus a ring of the last eventsTail; events_dropped counts the rest.
const (
	eventsHead = 1000
	eventsTail = 9000
)

type eventLog struct {
	seq  int64
	head []json.RawMessage
	tail []json.RawMessage // ring buffer
	next int               // next write position in tail once full
}

func (l *eventLog) add(ev json.RawMessage) {
	if len(l.head) < eventsHead {
		l.head = append(l.head, ev)
		return
	}
	if len(l.tail) < eventsTail {
		l.tail = append(l.tail, ev)
		return
	}
	l.tail[l.next] = ev
	l.next = (l.next + 1) % eventsTail
}

func (l *eventLog) all() []json.RawMessage {
	out := make([]json.RawMessage, 0, len(l.head)+len(l.tail))
	out = append(out, l.head...)
	out = append(out, l.tail[l.next:]...)
	out = append(out, l.tail[:l.next]...)
	return out
}

func (l *eventLog) dropped() int64 {
	return l.seq - int64(len(l.head)+len(l.tail))
}

// emitLocked appends an event; kinds failed and eval_error also bump the
// trigger's failure tally. Callers hold e.mu.
func (e *Engine) emitLocked(kind, triggerID string, extras ...Field) {
	e.log.seq++
	ts := vclock.FormatReal(e.real.Now())
	fields := []Field{{"seq", e.log.seq}, {"ts", ts}}
	if now, ok := e.clock.Now(); ok {
		fields = append(fields, Field{"virtual_time", vclock.FormatTime(now)})
	}
	fields = append(fields, Field{"kind", kind})
	if triggerID != "" {
		fields = append(fields, Field{"trigger_id", triggerID})
	}
	fields = append(fields, extras...)
	b, err := marshalOrdered(fields)
	if err != nil {
		e.logger.Error("trigger event not encodable", "kind", kind, "trigger_id", triggerID, "err", err)
		return
	}
	e.log.add(b)
	if kind == kindFailed || kind == kindEvalError {
		if t := e.triggers[triggerID]; t != nil {
			t.failureCount++
			t.lastFailureAt = &ts
		}
	}
	e.logger.Debug("trigger event", slog.String("kind", kind), slog.String("trigger_id", triggerID))
}

// Event kinds used internally (wire values in protocol).
const (
	kindAdded        = "added"
	kindRemoved      = "removed"
	kindDetected     = "detected"
	kindAnchored     = "anchored"
	kindReanchored   = "reanchored"
	kindActionOK     = "action_ok"
	kindActionFailed = "action_failed"
	kindVerifyOK     = "verify_ok"
	kindVerifyFailed = "verify_failed"
	kindFired        = "fired"
	kindFailed       = "failed"
	kindEvalError    = "eval_error"
)
