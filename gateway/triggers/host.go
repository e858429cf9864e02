package triggers

import (
	"bytes"
	"context"
	"encoding/json"
)

// Host is what the engine needs from the gateway core. Every method must be
// safe for concurrent use; none is called with the engine's lock held.
type Host interface {
	// CallTool makes a trigger internal call: no role-rule
	// check, no trigger evaluation, no barrier, no /mcp logging. as is the
	// tool action's role, stamped as _meta {"agentenv.io/role": as}; "" means
	// no _meta at all. result is the CallToolResult JSON. err is for calls
	// that produced no result (unknown tool, transport failure, timeout).
	CallTool(ctx context.Context, as, tool string, args json.RawMessage) (result json.RawMessage, isError bool, err error)
	// LookupTool reports whether name is a routable tool (backing or
	// native) and whether it is read-only (annotations.readOnlyHint true).
	LookupTool(name string) (info ToolInfo, found bool)
	// Discovered reports whether tool discovery has succeeded; before that
	// registration does not check tool names (they surface at fire time).
	Discovered() bool
	// ApplyRoleRule applies a permission action exactly like POST
	// /tools/disable (disable) or /tools/enable with body
	// {"role":role,"tools":tools}, or {"role":role,"tools":"*"} when all is
	// set (tools is then nil), and sends list_changed if the visible tool
	// set changed.
	ApplyRoleRule(role string, tools []string, all, disable bool) error
	// ChangelogID reads SELECT MAX(id) FROM public._changelog; nil when
	// unavailable (no SERVICE_DB_URL, or an error).
	ChangelogID(ctx context.Context) *int64
	// WriteTrajectory appends an engine event (trigger_fired,
	// internal_tool_call, trigger_barrier_timeout) to the trajectory. The
	// core adds event_id, timestamp_utc and virtual_time after event_type.
	// It must not block on I/O.
	WriteTrajectory(ev TrajectoryEvent)
}

// ToolInfo describes a routable tool.
type ToolInfo struct {
	ReadOnly bool
}

// ToolCall is a completed call at an external boundary (/mcp or /step),
// fed to Engine.AfterToolCall.
type ToolCall struct {
	// Role is the caller's gateway role ("default" when the header was
	// blank).
	Role string
	// Tool is the exposed tool name.
	Tool string
	// Args are the call's raw arguments (empty means {}).
	Args json.RawMessage
	// Result is the CallToolResult JSON the caller gets; IsError is its
	// isError flag (also true for calls the gateway refused or that failed
	// in transport).
	Result  json.RawMessage
	IsError bool
}

// TrajectoryEvent is an engine event for the env trajectory. Fields are in
// wire order and follow the base fields the core writes.
type TrajectoryEvent struct {
	Type   string
	Fields []Field
}

// Field is one key of an ordered JSON object.
type Field struct {
	Key   string
	Value any
}

// MarshalJSON renders {"event_type":Type, Fields...} (without the base
// fields the core adds).
func (ev TrajectoryEvent) MarshalJSON() ([]byte, error) {
	return marshalOrdered(append([]Field{{"event_type", ev.Type}}, ev.Fields...))
}

// Payload renders the fields as a JSON object ({"source":…,…}), without
// event_type and the base fields.
func (ev TrajectoryEvent) Payload() json.RawMessage {
	b, err := marshalOrdered(ev.Fields)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// EncodeFields renders the fields as the inside of a JSON object, without
// braces (`"source":"trigger_engine","trigger_id":"x"`), so the core can
// splice them after its base fields.
func (ev TrajectoryEvent) EncodeFields() ([]byte, error) {
	b, err := marshalOrdered(ev.Fields)
	if err != nil {
		return nil, err
	}
	return b[1 : len(b)-1], nil
}

func marshalOrdered(fields []Field) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(f.Key)
		buf.Write(k)
		buf.WriteByte(':')
		v, err := marshalValue(f.Value)
		if err != nil {
			return nil, err
		}
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func marshalValue(v any) ([]byte, error) {
	switch x := v.(type) {
	case []Field:
		return marshalOrdered(x)
	case json.RawMessage:
		if len(x) == 0 {
			return []byte("null"), nil
		}
		return x, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
