package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// States of a trajectory (TrajectoryEventsResponse.State).
const (
	TrajectoryStatePending   = "pending"
	TrajectoryStateRunning   = "running"
	TrajectoryStateCompleted = "completed"
	TrajectoryStateFailed    = "failed"
	TrajectoryStateCanceled  = "canceled"
)

// Cursor limits of trajectory events reads.
const (
	TrajectoryMaxLimit     = 1000
	TrajectoryMaxPageBytes = 4 << 20
)

// TrajectoryRequest is the body of trajectory get (POST /ext/trajectory).
// Exactly one of TaskID or ContextID is set; After (with optional Limit)
// selects a cursor read; Objects selects the later-phase object variants.
type TrajectoryRequest struct {
	TaskID    string
	ContextID string
	// After is nil for a whole read; else the strict non-negative cursor.
	After *int
	// Limit is 0 when not given (meaning TrajectoryMaxLimit).
	Limit   int
	Objects json.RawMessage
}

// DecodeTrajectoryRequest decodes and validates a get body: unknown
// fields, both or neither ids, a non-integer/negative/boolean/string
// after, a limit outside 1..1000 or a limit without after are errors.
func DecodeTrajectoryRequest(b []byte) (*TrajectoryRequest, error) {
	var w struct {
		TaskID    *string         `json:"task_id"`
		ContextID *string         `json:"context_id"`
		After     json.RawMessage `json:"after"`
		Limit     json.RawMessage `json:"limit"`
		Objects   json.RawMessage `json:"objects"`
	}
	if err := decodeStrictObject(b, &w); err != nil {
		return nil, err
	}
	r := &TrajectoryRequest{}
	switch {
	case w.TaskID != nil && w.ContextID != nil:
		return nil, errors.New("task_id, context_id: give exactly one")
	case w.TaskID != nil:
		if *w.TaskID == "" {
			return nil, errors.New("task_id: must not be empty")
		}
		r.TaskID = *w.TaskID
	case w.ContextID != nil:
		if *w.ContextID == "" {
			return nil, errors.New("context_id: must not be empty")
		}
		r.ContextID = *w.ContextID
	default:
		return nil, errors.New("task_id or context_id: required")
	}
	if w.After != nil {
		n, err := strictInt(w.After)
		if err != nil || n < 0 {
			return nil, errors.New("after: must be a non-negative integer")
		}
		r.After = &n
	}
	if w.Limit != nil {
		if r.After == nil {
			return nil, errors.New("limit: only allowed with after")
		}
		n, err := strictInt(w.Limit)
		if err != nil || n < 1 || n > TrajectoryMaxLimit {
			return nil, errors.New("limit: must be an integer from 1 to 1000")
		}
		r.Limit = n
	}
	if w.Objects != nil {
		if !isObject(w.Objects) {
			return nil, errors.New("objects: must be an object")
		}
		if r.After != nil {
			return nil, errors.New("objects: not allowed with after")
		}
		r.Objects = w.Objects
	}
	return r, nil
}

// strictInt accepts only a JSON integer literal (no bool, string, float).
func strictInt(raw json.RawMessage) (int, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return 0, errors.New("not an integer")
	}
	return strconv.Atoi(s)
}

// TrajectoryResponse answers a whole read: {"trajectory": <JSON>}.
type TrajectoryResponse struct {
	Trajectory json.RawMessage `json:"trajectory"`
}

// TrajectoryEventsResponse answers a cursor read.
type TrajectoryEventsResponse struct {
	ContextID string            `json:"context_id"`
	TaskID    string            `json:"task_id"`
	State     string            `json:"state"`
	Format    string            `json:"format,omitempty"`
	Events    []json.RawMessage `json:"events"`
	Next      int               `json:"next"`
	HasMore   bool              `json:"has_more"`
}
