package protocol

import "encoding/json"

// Bodies of the gateway's trigger routes (urn:agentenv:triggers/v1).
// Trigger specs themselves travel as raw JSON: the gateway
// validates them strictly (gateway/triggers), and clients usually write them
// as literals.

// TriggersRegisterRequest is the body of POST /triggers/register.
// WatchRoles nil inherits the registered set (["default"] on the very first
// registration); Executor nil keeps the registered executor.
type TriggersRegisterRequest struct {
	WatchRoles []string          `json:"watch_roles,omitempty"`
	Executor   *TriggerExecutor  `json:"executor,omitempty"`
	Triggers   []json.RawMessage `json:"triggers"`
}

// TriggerExecutor is the A2A agent that runs nl actions. TimeoutSeconds nil
// means 120.
type TriggerExecutor struct {
	A2AURL         string   `json:"a2a_url"`
	Role           string   `json:"role"`
	TimeoutSeconds *float64 `json:"timeout_seconds,omitempty"`
}

// TriggersRegistered is the 200 body of POST /triggers/register: Added lists
// every id of the batch (no-op re-adds included), All every registered id.
type TriggersRegistered struct {
	OK    bool     `json:"ok"`
	Added []string `json:"added"`
	All   []string `json:"all"`
}

// TriggersRemoveRequest is the body of POST /triggers/remove.
type TriggersRemoveRequest struct {
	IDs []string `json:"ids"`
}

// TriggersRemoved is the 200 body of POST /triggers/remove: the ids that
// existed.
type TriggersRemoved struct {
	OK      bool     `json:"ok"`
	Removed []string `json:"removed"`
}

// TriggersCleared is the 200 body of POST /triggers/clear.
type TriggersCleared struct {
	OK bool `json:"ok"`
}

// Trigger statuses.
const (
	TriggerArmed  = "armed"
	TriggerFiring = "firing"
	TriggerQueued = "queued"
	TriggerFired  = "fired"
	TriggerFailed = "failed"
)

// Kinds of trigger log events.
const (
	TriggerEventAdded        = "added"
	TriggerEventRemoved      = "removed"
	TriggerEventDetected     = "detected"
	TriggerEventAnchored     = "anchored"
	TriggerEventReanchored   = "reanchored"
	TriggerEventActionOK     = "action_ok"
	TriggerEventActionFailed = "action_failed"
	TriggerEventVerifyOK     = "verify_ok"
	TriggerEventVerifyFailed = "verify_failed"
	TriggerEventFired        = "fired"
	TriggerEventFailed       = "failed"
	TriggerEventEvalError    = "eval_error"
)

// TriggersState is the body of GET /triggers/state. Events are kept raw
// because each kind carries its own extra keys; decode the common ones with
// TriggerEventHeader.
type TriggersState struct {
	Config        TriggersConfig    `json:"config"`
	Triggers      []TriggerStatus   `json:"triggers"`
	Events        []json.RawMessage `json:"events"`
	EventsDropped int64             `json:"events_dropped"`
}

// TriggersConfig is the engine configuration echoed by GET /triggers/state.
type TriggersConfig struct {
	WatchRoles         []string `json:"watch_roles"`
	ExecutorConfigured bool     `json:"executor_configured"`
}

// TriggerStatus is one trigger in GET /triggers/state. When echoes only the
// schedule keys (type, tool, repeat, at, after, offset, every, count, until,
// seed), never check or where. Timestamps are real time (ISO 8601,
// "+00:00"); NextMark is virtual ("Z").
type TriggerStatus struct {
	ID            string          `json:"id"`
	Type          string          `json:"type"`
	When          json.RawMessage `json:"when"`
	Status        string          `json:"status"`
	DetectedAt    *string         `json:"detected_at"`
	FiredAt       *string         `json:"fired_at"`
	FireCount     int64           `json:"fire_count"`
	FailureCount  int64           `json:"failure_count"`
	LastFailureAt *string         `json:"last_failure_at"`
	Barrier       json.RawMessage `json:"barrier"`
	Pending       int             `json:"pending"`
	NextMark      *string         `json:"next_mark"`
}

// TriggerEventHeader holds the keys every trigger log event has.
// VirtualTime is empty when the clock was unarmed; TriggerID is empty for
// engine-wide events.
type TriggerEventHeader struct {
	Seq         int64  `json:"seq"`
	TS          string `json:"ts"`
	VirtualTime string `json:"virtual_time,omitempty"`
	Kind        string `json:"kind"`
	TriggerID   string `json:"trigger_id,omitempty"`
}
