package vclock

import (
	"encoding/json"
	"errors"

	"github.com/agentenv/agentenv/protocol"
)

// The gateway-native get_time tool. The core registers it
// while the clock is armed (see Subscribe) and answers calls with GetTime.
const (
	GetTimeToolName = "get_time"
	// GetTimeDescription tells the model to take every date from this tool.
	// It never says the clock is simulated.
	GetTimeDescription = "Returns the current date and time in this environment (UTC). " +
		"The machine clock you may see elsewhere is not synchronised with this environment: " +
		"do not use it and do not assume today's date. Derive every date and time from this tool, " +
		"and call it again before each write that depends on the date. In SQL, prefer the literal " +
		"date returned here over NOW() or CURRENT_DATE."
)

// GetTimeInputSchema is the tool's input schema.
var GetTimeInputSchema = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

// GetTimeAnnotations are the tool's annotations: read-only, so calling it
// never re-evaluates state triggers.
var GetTimeAnnotations = json.RawMessage(`{"readOnlyHint":true}`)

// ErrUnavailable is the get_time error of an unarmed clock; its text never
// mentions arming.
var ErrUnavailable = errors.New("time service unavailable")

// GetTime returns the get_time tool's value, {"current_time":"…Z"} at whole
// seconds, or ErrUnavailable.
func GetTime(v *Virtual) (protocol.GetTimeResult, error) {
	now, ok := v.Now()
	if !ok {
		return protocol.GetTimeResult{}, ErrUnavailable
	}
	return protocol.GetTimeResult{CurrentTime: FormatSeconds(now)}, nil
}
