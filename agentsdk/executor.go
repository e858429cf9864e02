package agentsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/agentenv/agentenv/protocol"
)

// executor adapts the Agent to a2a-go's AgentExecutor.
type executor struct{ s *Server }

var _ a2asrv.AgentExecutor = executor{}

type panicError struct{ v any }

func (p panicError) Error() string { return fmt.Sprintf("panic: %v", p.v) }

// errEmptyResult marks a completed result without parts.
var errEmptyResult = errors.New("agentsdk: a completed result must have at least one part")

func (e executor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	s := e.s
	in := inboundFrom(ctx)
	if rc.StoredTask == nil {
		submitted := a2a.NewSubmittedTask(rc, rc.Message)
		if in != nil && in.nonBlocking {
			snap, err := deepCopyTask(submitted)
			if err == nil {
				// Taken by requestHandler when it answers; bounded otherwise.
				s.submitted.put(string(submitted.ID), snap)
			}
		}
		if err := q.Write(ctx, submitted); err != nil {
			return err
		}
	}
	tlog := s.traj.register(string(rc.TaskID), rc.ContextID)
	unlock, err := s.locks.lock(ctx, rc.ContextID)
	if err != nil {
		tlog.transition(protocol.TrajectoryStateCanceled, nil)
		return nil
	}
	defer unlock()
	defer s.traj.ended(rc.ContextID)
	if ctx.Err() != nil {
		tlog.transition(protocol.TrajectoryStateCanceled, nil)
		return nil
	}
	tlog.transition(protocol.TrajectoryStateRunning, nil)
	if err := q.Write(ctx, a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking, nil)); err != nil {
		return err
	}

	task, timeout := s.newTask(rc, in, tlog, q)
	res, runErr := s.runAgent(ctx, task, timeout)

	if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
		// Canceled: Cancel wrote the canceled status and sealed the log.
		tlog.transition(protocol.TrajectoryStateCanceled, nil)
		return nil
	}
	state, parts := s.terminal(rc, res, runErr)
	trajState := protocol.TrajectoryStateCompleted
	var native json.RawMessage
	if state == a2a.TaskStateCompleted {
		if res.SessionRef != "" {
			s.sessions.put(rc.ContextID, res.SessionRef)
		}
		if res.Trajectory != nil {
			if tlog.Len() > 0 {
				s.log.Warn("native trajectory replaces the logged events for whole reads",
					slog.String("task_id", string(rc.TaskID)), slog.Int("events", tlog.Len()))
			}
			native = res.Trajectory
		}
	} else {
		trajState = protocol.TrajectoryStateFailed
	}
	tlog.transition(trajState, native)
	msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, toA2AParts(parts)...)
	ev := a2a.NewStatusUpdateEvent(rc, state, msg)
	ev.Final = true
	return q.Write(ctx, ev)
}

func (e executor) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	if l := e.s.traj.task(string(rc.TaskID)); l != nil {
		l.transition(protocol.TrajectoryStateCanceled, nil)
	}
	ev := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

// newTask builds the immutable request of one run.
func (s *Server) newTask(rc *a2asrv.RequestContext, in *inbound, tlog *TrajectoryLog, q eventqueue.Queue) (*Task, time.Duration) {
	cfg := s.config.effective()
	t := &Task{
		ID: string(rc.TaskID), ContextID: rc.ContextID,
		MCPServers: s.mcp.snapshot(),
		Peers:      s.peers.get(),
		Skills:     s.skills.snapshot(),
		Trajectory: tlog,
		config:     cfg,
		srv:        s,
		sessions:   s.mcpSessionsFor(rc.ContextID),
	}
	if in != nil && rc.Message != nil && in.messageID == rc.Message.ID {
		t.Parts = in.parts
		t.Header = in.header
	} else if rc.Message != nil {
		t.Parts = fromA2AParts(rc.Message.Parts)
	}
	if t.Header == nil {
		t.Header = map[string][]string{}
	}
	if ref, ok := s.sessions.get(rc.ContextID); ok {
		t.SessionRef = ref
	}
	if rc.Message != nil && rc.Message.Metadata != nil {
		if b, err := json.Marshal(rc.Message.Metadata); err == nil {
			t.Metadata = decodeObject(b)
		}
	}
	var role *string
	_ = json.Unmarshal(cfg[protocol.ConfigRole], &role)
	if role != nil && *role != "" {
		t.Role = *role
		if t.Metadata == nil {
			t.Metadata = map[string]any{}
		}
		t.Metadata["role"] = *role
	} else {
		t.Metadata = maps.Clone(t.Metadata)
	}
	if s.streaming {
		t.emit = func(ctx context.Context, parts []protocol.Part, metadata map[string]any) error {
			if t.ended.Load() {
				return ErrTaskEnded
			}
			ev := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking,
				a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, toA2AParts(parts)...))
			ev.Metadata = metadata
			return q.Write(ctx, ev)
		}
	}
	timeout := time.Duration(protocol.DefaultTimeoutSeconds) * time.Second
	var secs int
	if json.Unmarshal(cfg[protocol.ConfigTimeoutSeconds], &secs) == nil && secs > 0 {
		timeout = time.Duration(secs) * time.Second
	}
	return t, timeout
}

// errTaskTimeout is the cause of a run context that hit timeout_seconds.
var errTaskTimeout = errors.New("agentsdk: task timeout")

func (s *Server) runAgent(ctx context.Context, t *Task, timeout time.Duration) (res *Result, err error) {
	runCtx, cancel := context.WithTimeoutCause(ctx, timeout, errTaskTimeout)
	defer cancel()
	defer t.ended.Store(true)
	defer func() {
		if p := recover(); p != nil {
			s.log.Debug("agent panicked", slog.String("stack", string(debug.Stack())))
			res, err = nil, panicError{p}
		}
	}()
	res, err = s.handler(runCtx, t)
	if err == nil && errors.Is(context.Cause(runCtx), errTaskTimeout) && res == nil {
		err = errTaskTimeout
	}
	if err != nil && errors.Is(context.Cause(runCtx), errTaskTimeout) {
		var f *Failure
		if !errors.As(err, &f) {
			err = &Failure{Type: protocol.ErrorTypeAgent, Code: "task_timeout",
				Message: fmt.Sprintf("The task did not finish within %d seconds", int(timeout/time.Second))}
		}
	}
	return res, err
}

// terminal maps a run outcome to the terminal state and message parts.
func (s *Server) terminal(rc *a2asrv.RequestContext, res *Result, runErr error) (a2a.TaskState, []protocol.Part) {
	var f *Failure
	if runErr == nil && res != nil {
		runErr = validateResult(res)
	}
	switch {
	case runErr == nil && res != nil && (len(res.Parts) > 0 || res.StructuredOutput != nil):
		parts := append([]protocol.Part(nil), res.Parts...)
		if res.StructuredOutput != nil {
			parts = append(parts, dataPart(map[string]json.RawMessage{"structured_output": res.StructuredOutput}))
		}
		if !res.Usage.IsZero() {
			u := res.Usage
			parts = append(parts, protocol.TrailerData{Usage: &u}.Part())
		}
		return a2a.TaskStateCompleted, parts
	case errors.As(runErr, &f):
		typ, code, msg := f.Type, f.Code, f.Message
		if typ == "" {
			typ = protocol.ErrorTypeAgent
		}
		if code == "" {
			code = "agent_failure"
		}
		if msg == "" {
			msg = "The agent failed"
		}
		parts := append([]protocol.Part(nil), f.Parts...)
		if len(parts) == 0 {
			parts = []protocol.Part{protocol.TextPart(msg)}
		}
		tr := protocol.TrailerData{ErrorType: typ, ErrorCode: code, ErrorMessage: msg}
		if !f.Usage.IsZero() {
			u := f.Usage
			tr.Usage = &u
		}
		return a2a.TaskStateFailed, append(parts, tr.Part())
	}
	if runErr == nil {
		runErr = errEmptyResult
	}
	id := correlationID()
	s.log.Error("task failed unexpectedly", slog.String("correlation_id", id),
		slog.String("task_id", string(rc.TaskID)), slog.String("context_id", rc.ContextID), slog.Any("error", runErr))
	msg := protocol.UnhandledMessage(id)
	return a2a.TaskStateFailed, []protocol.Part{protocol.TextPart(msg),
		protocol.TrailerData{ErrorType: protocol.ErrorTypeInfra, ErrorCode: protocol.ErrorCodeUnhandled, ErrorMessage: msg}.Part()}
}

// validateResult refuses invalid return values (they become opaque
// failures): unknown part kinds, data that is not an object, invalid JSON
// in StructuredOutput or Trajectory (which is compacted in place).
func validateResult(res *Result) error {
	for i, p := range res.Parts {
		switch p.Kind {
		case protocol.PartKindText, protocol.PartKindFile:
		case protocol.PartKindData:
			if d := bytes.TrimSpace(p.Data); len(d) == 0 || d[0] != '{' || !json.Valid(d) {
				return fmt.Errorf("agentsdk: result part %d: data must be a JSON object", i)
			}
		default:
			return fmt.Errorf("agentsdk: result part %d: unknown kind %q", i, p.Kind)
		}
	}
	if res.StructuredOutput != nil && !json.Valid(res.StructuredOutput) {
		return errors.New("agentsdk: result structured output is not valid JSON")
	}
	if res.Trajectory != nil {
		var b bytes.Buffer
		if err := json.Compact(&b, res.Trajectory); err != nil {
			return errors.New("agentsdk: result trajectory is not valid JSON")
		}
		res.Trajectory = b.Bytes()
	}
	return nil
}

func deepCopyTask(t *a2a.Task) (*a2a.Task, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	var out a2a.Task
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
