package protocol

import "encoding/json"

// RedactedValue is what agent-config get returns for a write-only field.
const RedactedValue = "***"

// Base agent-config wire names, supported by every agent.
const (
	ConfigName           = "name"
	ConfigDescription    = "description"
	ConfigRole           = "role"
	ConfigTimeoutSeconds = "timeout_seconds"
)

// DefaultTimeoutSeconds is the default of the timeout_seconds base field.
const DefaultTimeoutSeconds = 600

// AgentConfigGetResponse answers agent-config get: only the explicitly set
// wire names, write-only ones as RedactedValue.
type AgentConfigGetResponse struct {
	Config map[string]json.RawMessage `json:"config"`
}

// DecodeAgentConfigSet decodes a set body into its wire-name fields. Which
// names are allowed depends on the agent; the caller checks them.
func DecodeAgentConfigSet(b []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := decodeStrictObject(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}
