package protocol

import (
	"encoding/json"
	"fmt"
)

// Values of TrailerData.ErrorType.
const (
	ErrorTypeAgent = "agent_error"
	ErrorTypeInfra = "infra_error"
)

// ErrorCodeUnhandled is the error_code of an opaque unexpected failure.
const ErrorCodeUnhandled = "framework.unhandled_exception"

// UnhandledMessage is the error_message (and 500 body) of an opaque
// failure; correlationID (32 hex) also appears in the server log.
func UnhandledMessage(correlationID string) string {
	return fmt.Sprintf("An unexpected framework error occurred. Correlation ID: %s", correlationID)
}

// Usage is the usage object of the trailing data part of a terminal agent
// message. Zero fields are omitted.
type Usage struct {
	ToolCallCount   int64           `json:"tool_call_count,omitempty"`
	InputTokens     int64           `json:"input_tokens,omitempty"`
	OutputTokens    int64           `json:"output_tokens,omitempty"`
	TotalTokens     int64           `json:"total_tokens,omitempty"`
	CostUSD         float64         `json:"cost_usd,omitempty"`
	ProviderDetails json.RawMessage `json:"provider_details,omitempty"`
}

// IsZero reports whether no usage was recorded.
func (u Usage) IsZero() bool {
	return u.ToolCallCount == 0 && u.InputTokens == 0 && u.OutputTokens == 0 && u.TotalTokens == 0 &&
		u.CostUSD == 0 && len(u.ProviderDetails) == 0
}

// TrailerData is the data of the one trailing DataPart of a terminal agent
// message: usage and/or the error triple.
type TrailerData struct {
	Usage        *Usage `json:"usage,omitempty"`
	ErrorType    string `json:"error_type,omitempty"`
	ErrorCode    string `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
}

// Part returns the trailer as a data part.
func (t TrailerData) Part() Part {
	return DataPart(mustJSON(t))
}
