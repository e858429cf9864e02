package rubricsverifier

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// TrajectoryFilter trims the agent's trajectory before a judge reads it:
// long trajectories cost judge context and bury the steps that matter.
// Events are the entries of the trajectory's JSON array (or of its
// "events" array); a trajectory of another shape is passed on whole. The
// run's apply_trajectory_filter override (--no-trajectory-filter) set to
// false turns the filter off. Unknown keys are refused at validation.
type TrajectoryFilter struct {
	// EventTypes keeps only events whose "type" is listed; empty keeps all.
	EventTypes []string `json:"event_types,omitempty"`
	// ExcludeEventTypes drops events whose "type" is listed.
	ExcludeEventTypes []string `json:"exclude_event_types,omitempty"`
	// Roles keeps only events whose "role" is listed; empty keeps all.
	Roles []string `json:"roles,omitempty"`
	// DropFields removes these keys from every event (e.g. raw payloads).
	DropFields []string `json:"drop_fields,omitempty"`
	// MaxStringChars cuts every string value of an event (but its type
	// and role) to this many bytes, marked "…[truncated]"; 0 = no cut.
	MaxStringChars int `json:"max_string_chars,omitempty"`
	// LastNEvents keeps the last N events after the other filters; 0 = all.
	LastNEvents int `json:"last_n_events,omitempty"`
}

// UnmarshalJSON decodes strictly, so a misspelt key is an error rather
// than a filter silently not applied.
func (f *TrajectoryFilter) UnmarshalJSON(b []byte) error {
	type plain TrajectoryFilter
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var p plain
	if err := d.Decode(&p); err != nil {
		return err
	}
	*f = TrajectoryFilter(p)
	return nil
}

func (f *TrajectoryFilter) validate() error {
	switch {
	case f.MaxStringChars < 0:
		return fmt.Errorf("max_string_chars must not be negative")
	case f.LastNEvents < 0:
		return fmt.Errorf("last_n_events must not be negative")
	}
	return nil
}

// Apply filters a trajectory (JSON). A nil filter or a trajectory that is
// neither an array nor an object with an "events" array is returned as is.
func (f *TrajectoryFilter) Apply(traj []byte) []byte {
	if f == nil || len(traj) == 0 {
		return traj
	}
	var events []any
	var wrapper map[string]any
	if err := json.Unmarshal(traj, &events); err != nil {
		if json.Unmarshal(traj, &wrapper) != nil {
			return traj
		}
		ev, ok := wrapper["events"].([]any)
		if !ok {
			return traj
		}
		events = ev
	}
	kept := make([]any, 0, len(events))
	for _, e := range events {
		m, ok := e.(map[string]any)
		if !ok {
			if len(f.EventTypes) == 0 && len(f.Roles) == 0 {
				kept = append(kept, e)
			}
			continue
		}
		typ, _ := m["type"].(string)
		role, _ := m["role"].(string)
		if (len(f.EventTypes) > 0 && !slices.Contains(f.EventTypes, typ)) || slices.Contains(f.ExcludeEventTypes, typ) ||
			(len(f.Roles) > 0 && !slices.Contains(f.Roles, role)) {
			continue
		}
		for _, k := range f.DropFields {
			delete(m, k)
		}
		if f.MaxStringChars > 0 {
			for k, v := range m {
				if k != "type" && k != "role" { // labels stay whole
					m[k] = cut(v, f.MaxStringChars)
				}
			}
		}
		kept = append(kept, e)
	}
	if f.LastNEvents > 0 && len(kept) > f.LastNEvents {
		kept = kept[len(kept)-f.LastNEvents:]
	}
	var out []byte
	if wrapper != nil {
		wrapper["events"] = kept
		out, _ = json.Marshal(wrapper)
	} else {
		out, _ = json.Marshal(kept)
	}
	return out
}

// cut shortens every string in v to n bytes.
func cut(v any, n int) any {
	switch x := v.(type) {
	case string:
		if len(x) > n {
			return x[:n] + "…[truncated]"
		}
	case map[string]any:
		for k, e := range x {
			x[k] = cut(e, n)
		}
	case []any:
		for i, e := range x {
			x[i] = cut(e, n)
		}
	}
	return v
}
