package triggers

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/agentenv/agentenv/gateway/vclock"
	"github.com/agentenv/agentenv/internal/jsonvalue"
	"github.com/agentenv/agentenv/protocol"
)

// emit logs an event for t unless t was removed meanwhile.
func (e *Engine) emit(t *trigger, kind string, extras ...Field) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !t.removed {
		e.emitLocked(kind, t.spec.id, extras...)
	}
}

// fire runs an action or state trigger's actions for one detection, then
// drains the calls queued meanwhile. A failure re-arms.
func (e *Engine) fire(t *trigger, q *queuedCall) {
	// settled is set, under e.mu, once this firing has handed the trigger
	// back. After that a new detection may already be firing it, so the
	// clean-up below must not take that one for a firing that never settled.
	settled := false
	defer func() {
		r := recover()
		e.mu.Lock()
		defer e.mu.Unlock()
		q.finish()
		if r != nil {
			e.logger.Error("trigger fire panicked", "trigger_id", t.spec.id, "panic", fmt.Sprint(r))
		}
		if !settled && !t.removed && inFlight(t.status) {
			e.emitLocked(kindFailed, t.spec.id, Field{"detail", "firing did not settle"}, Field{"dropped", len(t.pending)})
			t.status = protocol.TriggerArmed
			for _, p := range t.pending {
				p.finish()
			}
			t.pending = nil
		}
	}()
	s := t.spec
	for {
		if s.kind == kindAction {
			var provoking any
			if q.cc != nil && q.cc.args != nil {
				provoking = s.tool
			}
			e.host.WriteTrajectory(TrajectoryEvent{Type: "trigger_fired", Fields: []Field{
				{"source", "trigger_engine"}, {"trigger_id", s.id}, {"provoking_tool", provoking},
			}})
		}
		ok := true
		for i := range s.actions {
			if !e.runAction(t, i, q.cc) {
				ok = false
				e.emit(t, kindFailed, Field{"action_index", i})
				break
			}
		}
		e.mu.Lock()
		if t.removed {
			settled = true
			e.mu.Unlock()
			return
		}
		if ok {
			t.fireCount++
			t.firedAt = e.nowReal()
			e.emitLocked(kindFired, s.id, Field{"fire_count", t.fireCount})
			e.resolveDependentsLocked(s.id)
		}
		q.finish()
		if len(t.pending) > 0 {
			q = t.pending[0]
			t.pending = t.pending[1:]
			t.status = protocol.TriggerFiring
			t.detectedAt = e.nowReal()
			e.mu.Unlock()
			continue
		}
		if s.repeat || !ok {
			t.status = protocol.TriggerArmed
		} else {
			t.status = protocol.TriggerFired
		}
		settled = true
		e.poke()
		e.mu.Unlock()
		return
	}
}

// fireTime runs a time trigger's actions once per due mark; a failure is
// terminal for time triggers.
func (e *Engine) fireTime(t *trigger, marks []string, capped, terminated bool) {
	s := t.spec
	defer func() {
		if r := recover(); r != nil {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.logger.Error("time trigger fire panicked", "trigger_id", s.id, "panic", fmt.Sprint(r))
			if !t.removed {
				t.status, t.nextMark = protocol.TriggerFailed, nil
				e.emitLocked(kindFailed, s.id, Field{"detail", truncateRunes(fmt.Sprint(r), 300)})
				e.poke()
			}
		}
	}()
	for _, mark := range marks {
		for i := range s.actions {
			if !e.runAction(t, i, nil) {
				e.mu.Lock()
				if !t.removed {
					t.status, t.nextMark = protocol.TriggerFailed, nil
					e.emitLocked(kindFailed, s.id, Field{"action_index", i})
					e.poke()
				}
				e.mu.Unlock()
				return
			}
		}
		e.mu.Lock()
		if t.removed {
			e.mu.Unlock()
			return
		}
		t.fireCount++
		t.firedAt = e.nowReal()
		e.emitLocked(kindFired, s.id, Field{"fire_count", t.fireCount}, Field{"mark", mark}, Field{"capped", capped})
		e.mu.Unlock()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.removed {
		return
	}
	if terminated {
		t.status, t.nextMark = protocol.TriggerFired, nil
	} else {
		t.status = protocol.TriggerArmed
	}
	e.resolveDependentsLocked(s.id)
	e.poke()
}

// resolveDependentsLocked stamps the mark (virtual now + offset) of every
// time trigger anchored on anchorID that is still waiting.
func (e *Engine) resolveDependentsLocked(anchorID string) {
	now, ok := e.clock.Now()
	if !ok {
		return
	}
	for _, id := range e.order {
		t := e.triggers[id]
		tm := t.spec.tm
		if tm == nil || !tm.hasAfter || tm.after != anchorID || t.resolved {
			continue
		}
		m := vclock.Advance(now, tm.offset)
		t.nextMark, t.resolved = &m, true
		e.emitLocked(kindAnchored, id, Field{"anchor", anchorID}, Field{"mark", vclock.FormatTime(m)})
	}
	e.poke()
}

// evalState runs a state trigger's check, coalescing requests that arrive
// meanwhile into one more evaluation.
func (e *Engine) evalState(t *trigger) {
	for {
		matched, err := e.runCheck(t.ctx, t.spec.check, nil, "")
		e.mu.Lock()
		if t.removed {
			e.mu.Unlock()
			return
		}
		if err != nil {
			e.emitLocked(kindEvalError, t.spec.id, Field{"detail", truncateRunes(err.Error(), 300)})
			matched = false
		}
		t.evaluating = false
		if matched && t.status == protocol.TriggerArmed {
			e.detectLocked(t, t.evalProvoking, nil)
		}
		if t.evalPending && t.status == protocol.TriggerArmed {
			t.evalPending, t.evaluating = false, true
			e.mu.Unlock()
			continue
		}
		t.evalPending = false
		e.mu.Unlock()
		return
	}
}

// runCheck evaluates a check. as stamps the internal calls ("" for
// none). An error is a broken check (unresolvable placeholder, a call that
// produced no result).
func (e *Engine) runCheck(ctx context.Context, c *check, cc *callCtx, as string) (bool, error) {
	bindings := map[string]any{}
	for _, st := range c.steps {
		args, err := render(argsOrEmpty(st.args), bindings, cc)
		if err != nil {
			return false, err
		}
		res, isErr, err := e.host.CallTool(ctx, as, st.tool, mustMarshal(args))
		if err != nil {
			return false, fmt.Errorf("check step %s: %w", st.tool, err)
		}
		if isErr {
			return false, nil
		}
		raw := resultText(res)
		data, derr := jsonvalue.Decode([]byte(raw))
		if derr != nil {
			data = nil
		}
		value := st.extract.apply(data, raw)
		if st.bind != "" {
			if !jsonvalue.NonEmpty(value) {
				return false, nil
			}
			bindings[st.bind] = value
		}
		if st.pred != nil && !st.pred.eval(value) {
			return false, nil
		}
	}
	return true, nil
}

func argsOrEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func (e *Engine) runVerify(t *trigger, idx int, c *check, cc *callCtx, as string) (bool, error) {
	ok, err := e.runCheck(t.ctx, c, cc, as)
	if err != nil {
		return false, err
	}
	if ok {
		e.emit(t, kindVerifyOK, Field{"action_index", idx})
	} else {
		e.emit(t, kindVerifyFailed, Field{"action_index", idx})
	}
	return ok, nil
}

// runAction runs one action and logs its outcome; false fails the fire.
func (e *Engine) runAction(t *trigger, idx int, cc *callCtx) bool {
	a := t.spec.actions[idx]
	ctx := t.ctx
	before := e.host.ChangelogID(ctx)
	var detail []Field
	switch a.typ {
	case actPermission:
		var tools []string
		if !a.allTools {
			tools = a.tools
		}
		if err := e.host.ApplyRoleRule(a.role, tools, a.allTools, a.permAction == "disable"); err != nil {
			e.emit(t, kindActionFailed, Field{"action_index", idx}, Field{"detail", truncateRunes(err.Error(), 300)})
			return false
		}
		detail = []Field{{"role", a.role}, {"action", a.permAction}, {"tools", a.tools}}
	case actTool:
		rendered, err := render(argsOrEmpty(a.args), nil, cc)
		if err != nil {
			e.emit(t, kindActionFailed, Field{"action_index", idx}, Field{"detail", truncateRunes(err.Error(), 300)}, Field{"tool", a.tool})
			return false
		}
		echo := echoArgs(rendered)
		res, isErr, err := e.host.CallTool(ctx, a.as, a.tool, mustMarshal(rendered))
		if err != nil {
			e.emit(t, kindActionFailed, Field{"action_index", idx}, Field{"detail", truncateRunes(err.Error(), 300)},
				Field{"tool", a.tool}, Field{"args", echo})
			return false
		}
		text := resultText(res)
		var as any
		if a.as != "" {
			as = a.as
		}
		e.host.WriteTrajectory(TrajectoryEvent{Type: "internal_tool_call", Fields: []Field{
			{"source", "trigger_engine"}, {"trigger_id", t.spec.id}, {"action_index", idx}, {"tool", a.tool},
			{"arguments", echo}, {"as", as}, {"ok", !isErr}, {"result_len", utf8.RuneCountInString(text)},
			{"result_sha256", digest(text)}, {"changelog_id_before", before}, {"changelog_id_after", e.host.ChangelogID(ctx)},
		}})
		if isErr {
			f := []Field{{"action_index", idx}, {"detail", truncateRunes(text, 300)}, {"tool", a.tool}, {"args", echo}}
			if a.as != "" {
				f = append(f, Field{"as", a.as})
			}
			e.emit(t, kindActionFailed, f...)
			return false
		}
		detail = []Field{{"tool", a.tool}, {"args", echo}}
		if a.as != "" {
			detail = append(detail, Field{"as", a.as})
		}
	case actNL:
		if !e.runNL(t, idx, a, cc) {
			return false
		}
		detail = []Field{{"nl", truncateRunes(a.instruction, 120)}}
	}
	if a.verify != nil && a.typ != actNL {
		ok, err := e.runVerify(t, idx, a.verify, cc, a.as)
		if err != nil {
			e.emit(t, kindActionFailed, Field{"action_index", idx}, Field{"detail", truncateRunes(err.Error(), 300)})
			return false
		}
		if !ok {
			return false
		}
	}
	e.emit(t, kindActionOK, Field{"action_index", idx}, Field{"detail", detail},
		Field{"changelog_id_before", before}, Field{"changelog_id_after", e.host.ChangelogID(ctx)})
	return true
}

// retrySentence is appended to an nl instruction whose first attempt failed
// verification.
const retrySentence = "\n\nYour previous attempt did not pass verification — the expected change is not observable in the environment. Do it again exactly as described."

func (e *Engine) runNL(t *trigger, idx int, a action, cc *callCtx) bool {
	e.mu.Lock()
	cfg := e.executor
	e.mu.Unlock()
	if cfg == nil {
		e.emit(t, kindActionFailed, Field{"action_index", idx}, Field{"detail", "no executor configured"})
		return false
	}
	ec := ExecutorConfig{A2AURL: cfg.a2aURL, Role: cfg.role, Timeout: cfg.timeout}
	instruction := a.instruction
	for attempt := 1; attempt <= 2; attempt++ {
		if err := e.exec.Execute(t.ctx, ec, "trigger-"+t.spec.id, instruction); err != nil {
			e.emit(t, kindActionFailed, Field{"action_index", idx},
				Field{"detail", truncateRunes(fmt.Sprintf("executor attempt %d did not complete: %v", attempt, err), 300)})
			return false
		}
		if a.verify == nil {
			return true
		}
		ok, err := e.runVerify(t, idx, a.verify, cc, "")
		if err != nil {
			e.emit(t, kindActionFailed, Field{"action_index", idx}, Field{"detail", truncateRunes(err.Error(), 300)})
			return false
		}
		if ok {
			return true
		}
		instruction = a.instruction + retrySentence
	}
	e.emit(t, kindActionFailed, Field{"action_index", idx}, Field{"detail", "verification failed after retry"})
	return false
}
