package protocol

import (
	"encoding/json"
	"math"
	"strconv"
)

// Bodies of the gateway's virtual clock routes (urn:agentenv:clock/v1).
// Times are RFC 3339 strings in UTC with a "Z" suffix and
// microseconds only when non-zero.

// ClockSetTimeRequest is the body of PUT /clock/set-time. Rate nil means 1.0.
// Servers validate the raw JSON themselves (a bool or a string rate must be
// refused, which a typed decode cannot tell apart from a missing key).
type ClockSetTimeRequest struct {
	VirtualTime string   `json:"virtual_time"`
	Rate        *float64 `json:"virtual_seconds_per_real_second,omitempty"`
}

// ClockState is the body of a successful PUT /clock/set-time and of
// GET /clock/state. An unarmed clock is exactly {"armed":false}.
// EnvGetTimeURL is set only by GET /clock/state.
type ClockState struct {
	Armed         bool   `json:"armed"`
	T0            string `json:"t0,omitempty"`
	Rate          *Float `json:"virtual_seconds_per_real_second,omitempty"`
	VirtualTime   string `json:"virtual_time,omitempty"`
	EnvGetTimeURL string `json:"env_get_time_url,omitempty"`
}

// ClockTime is the body of GET /clock/time.
type ClockTime struct {
	VirtualTime string `json:"virtual_time"`
}

// ClockCleared is the body of POST /clock/clear.
type ClockCleared struct {
	OK    bool `json:"ok"`
	Armed bool `json:"armed"`
}

// GetTimeResult is the value of the gateway-native get_time tool:
// whole seconds, "Z" suffix.
type GetTimeResult struct {
	CurrentTime string `json:"current_time"`
}

// ControlError is the {"ok":false,"error":"..."} envelope of the clock and
// trigger routes.
type ControlError struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

// Float is a float64 that always encodes with a decimal point or exponent
// (3600 → 3600.0), as the reference's Python floats do, so byte-level
// comparisons with the reference hold. It decodes any JSON number.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(v, 'g', -1, 64)}
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e16 {
		return strconv.AppendFloat(nil, v, 'f', 1, 64), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *Float) UnmarshalJSON(b []byte) error {
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}
