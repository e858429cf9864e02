package protocol

import "encoding/json"

// Event types of the env trajectory (urn:agentenv:trajectory/v1, env
// side). Each event is one JSONL line whose base fields come first, in this
// order: event_type, event_id ("event_<n>"), timestamp_utc (ISO 8601 with
// "+00:00"), virtual_time ("…Z", absent when the clock is unarmed), then the
// payload.
const (
	EventToolCall              = "tool_call"
	EventToolCallResult        = "tool_call_result"
	EventTriggerFired          = "trigger_fired"
	EventInternalToolCall      = "internal_tool_call"
	EventTriggerBarrierTimeout = "trigger_barrier_timeout"
)

// Values of the "source" payload field.
const (
	TrajectorySourceStep    = "step_api"
	TrajectorySourceTrigger = "trigger_engine"
)

// TrajectoryPath is the route serving the trajectory, and
// HeaderTrajectoryTotalBytes the header giving the exact body length.
const (
	TrajectoryPath             = "/trajectory"
	HeaderTrajectoryTotalBytes = "X-Trajectory-Total-Bytes"
	TrajectoryContentType      = "application/jsonl"
)

// TrajectoryToolCall is the payload of a tool_call event.
type TrajectoryToolCall struct {
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"`
}
