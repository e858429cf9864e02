package agentsdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/agentenv/agentenv/protocol"
)

// ErrTrajectorySealed is returned by Append after the task ended.
var ErrTrajectorySealed = errors.New("agentsdk: trajectory is sealed (the task ended)")

// TrajectoryLog is the live trajectory of one task: JSON-object events
// appended as the agent works, readable while it runs (cursor reads) and
// sealed when the task ends.
type TrajectoryLog struct {
	taskID, contextID string

	mu     sync.Mutex
	format string
	events []json.RawMessage
	state  string
	native json.RawMessage
}

// SetFormat names the event format ("<name>/<version>"); it must be called
// before the first Append and cannot change afterwards.
func (l *TrajectoryLog) SetFormat(format string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sealedLocked() {
		return ErrTrajectorySealed
	}
	if len(l.events) > 0 && format != l.format {
		return errors.New("agentsdk: trajectory format cannot change once an event exists")
	}
	l.format = format
	return nil
}

// Append records one event, serialised now (later changes to event are
// not seen). The event must encode as a JSON object.
func (l *TrajectoryLog) Append(event any) error {
	b, err := json.Marshal(event)
	if err != nil {
		return fmt.Errorf("agentsdk: trajectory event: %w", err)
	}
	if len(b) == 0 || b[0] != '{' {
		return errors.New("agentsdk: trajectory event must be a JSON object")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sealedLocked() {
		return ErrTrajectorySealed
	}
	l.events = append(l.events, b)
	return nil
}

// Len is the number of events so far.
func (l *TrajectoryLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

func (l *TrajectoryLog) sealedLocked() bool {
	switch l.state {
	case protocol.TrajectoryStateCompleted, protocol.TrajectoryStateFailed, protocol.TrajectoryStateCanceled:
		return true
	}
	return false
}

// transition moves a pending/running log forward; a sealed log keeps its
// state (so a cancel seen first wins over a later completion).
func (l *TrajectoryLog) transition(state string, native json.RawMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sealedLocked() {
		return
	}
	l.state = state
	if native != nil {
		l.native = native
	}
}

// trajectoryStore keeps the logs of the last maxContexts contexts.
type trajectoryStore struct {
	mu       sync.Mutex
	tasks    map[string]*TrajectoryLog
	contexts map[string][]*TrajectoryLog
	order    []string // context ids, least recently started first
	lastEnd  string
	max      int
}

func newTrajectoryStore(max int) *trajectoryStore {
	return &trajectoryStore{tasks: map[string]*TrajectoryLog{}, contexts: map[string][]*TrajectoryLog{}, max: max}
}

// register creates the pending log of a new task.
func (s *trajectoryStore) register(taskID, contextID string) *TrajectoryLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.tasks[taskID]; ok {
		return l
	}
	l := &TrajectoryLog{taskID: taskID, contextID: contextID, state: protocol.TrajectoryStatePending}
	s.tasks[taskID] = l
	if _, ok := s.contexts[contextID]; !ok {
		s.order = append(s.order, contextID)
	} else {
		s.touchLocked(contextID)
	}
	s.contexts[contextID] = append(s.contexts[contextID], l)
	s.evictLocked()
	return l
}

func (s *trajectoryStore) ended(contextID string) {
	s.mu.Lock()
	s.lastEnd = contextID
	s.mu.Unlock()
}

func (s *trajectoryStore) touchLocked(id string) {
	for i, c := range s.order {
		if c == id {
			s.order = append(append(s.order[:i:i], s.order[i+1:]...), id)
			return
		}
	}
}

// evictLocked drops the oldest contexts beyond max, never a running one
// nor the one that ended last.
func (s *trajectoryStore) evictLocked() {
	for i := 0; len(s.contexts) > s.max && i < len(s.order); {
		id := s.order[i]
		if id == s.lastEnd || s.openLocked(id) {
			i++
			continue
		}
		for _, l := range s.contexts[id] {
			delete(s.tasks, l.taskID)
		}
		delete(s.contexts, id)
		s.order = append(s.order[:i:i], s.order[i+1:]...)
	}
}

func (s *trajectoryStore) openLocked(contextID string) bool {
	for _, l := range s.contexts[contextID] {
		l.mu.Lock()
		open := !l.sealedLocked()
		l.mu.Unlock()
		if open {
			return true
		}
	}
	return false
}

func (s *trajectoryStore) task(id string) *TrajectoryLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tasks[id]
}

func (s *trajectoryStore) context(id string) []*TrajectoryLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*TrajectoryLog(nil), s.contexts[id]...)
}

func (s *Server) trajectoryExtension() *extension {
	return &extension{
		uri:         protocol.URITrajectory,
		description: "Read what the agent did: the trajectory of a task or a context, whole or by cursor.",
		endpoint:    protocol.AgentTrajectoryPath,
		methods: []*extMethod{{
			name: "get", verb: http.MethodPost,
			request: map[string]any{"oneOf": []any{
				fields([]string{"task_id"}, nil),
				fields([]string{"context_id"}, nil),
				fields([]string{"task_id", "after"}, []string{"limit"}),
				fields([]string{"context_id", "after"}, []string{"limit"}),
			}},
			handle: func(_ *http.Request, body []byte) (any, error) {
				req, err := protocol.DecodeTrajectoryRequest(body)
				if err != nil {
					return nil, badRequest(err)
				}
				if req.Objects != nil {
					return nil, badRequest(errors.New("unsupported request variant fields: objects"))
				}
				return s.readTrajectory(req)
			},
		}},
	}
}

type logSnapshot struct {
	taskID, contextID, state, format string
	events                           []json.RawMessage
	native                           json.RawMessage
}

func (l *TrajectoryLog) snapshot() logSnapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return logSnapshot{l.taskID, l.contextID, l.state, l.format, l.events[:len(l.events):len(l.events)], l.native}
}

func (s *Server) readTrajectory(req *protocol.TrajectoryRequest) (any, error) {
	var snaps []logSnapshot
	var current logSnapshot
	if req.TaskID != "" {
		l := s.traj.task(req.TaskID)
		if l == nil {
			return nil, notFound("unknown task_id")
		}
		current = l.snapshot()
		snaps = []logSnapshot{current}
		if req.After == nil {
			sealed := current.state != protocol.TrajectoryStatePending && current.state != protocol.TrajectoryStateRunning
			switch {
			case !sealed:
				return nil, notFound("the task has not ended yet; read it by cursor")
			case current.native != nil:
				return protocol.TrajectoryResponse{Trajectory: current.native}, nil
			case len(current.events) == 0:
				return nil, notFound("the task recorded no trajectory")
			}
			return protocol.TrajectoryResponse{Trajectory: mustArray(current.events)}, nil
		}
	} else {
		logs := s.traj.context(req.ContextID)
		if len(logs) == 0 {
			return nil, notFound("unknown context_id")
		}
		for _, l := range logs {
			snaps = append(snaps, l.snapshot())
		}
		current = snaps[len(snaps)-1]
		for _, sn := range snaps {
			if sn.state == protocol.TrajectoryStatePending || sn.state == protocol.TrajectoryStateRunning {
				current = sn
				break
			}
		}
		if req.After == nil {
			var all []json.RawMessage
			for _, sn := range snaps {
				all = append(all, sn.events...)
			}
			return protocol.TrajectoryResponse{Trajectory: mustArray(all)}, nil
		}
	}
	var all []json.RawMessage
	for _, sn := range snaps {
		all = append(all, sn.events...)
	}
	after := *req.After
	if after > len(all) {
		return nil, badRequest(errors.New("after: past the end of the trajectory"))
	}
	limit := req.Limit
	if limit == 0 {
		limit = protocol.TrajectoryMaxLimit
	}
	page := []json.RawMessage{}
	size := 0
	for i := after; i < len(all) && len(page) < limit; i++ {
		if len(page) > 0 && size+len(all[i]) > protocol.TrajectoryMaxPageBytes {
			break
		}
		size += len(all[i])
		page = append(page, all[i])
	}
	next := after + len(page)
	return protocol.TrajectoryEventsResponse{
		ContextID: current.contextID, TaskID: current.taskID, State: current.state, Format: current.format,
		Events: page, Next: next, HasMore: next < len(all),
	}, nil
}

func mustArray(events []json.RawMessage) json.RawMessage {
	if events == nil {
		events = []json.RawMessage{}
	}
	b, _ := json.Marshal(events)
	return b
}
