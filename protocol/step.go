package protocol

import (
	"encoding/json"
	"fmt"
)

// Actions of a gateway POST /step request (urn:agentenv:step/v1).
const (
	StepActionListTools = "list_tools"
	StepActionCallTool  = "call_tool"
)

// StepRequest is the body of POST /step. Arguments is kept verbatim so the
// gateway can forward the caller's bytes to the child unchanged.
type StepRequest struct {
	Action    string          `json:"action"`
	ToolName  string          `json:"tool_name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// StepTool is one entry of a list_tools answer and of a /state server
// entry: {name, description, parameters} plus, additively, annotations.
type StepTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// StepListTools is the 200 answer to {"action":"list_tools"}.
type StepListTools struct {
	Tools []StepTool `json:"tools"`
}

// StepRequestSchema is the request schema the gateway card advertises for
// the step method.
const StepRequestSchema = `{"type":"object","properties":{"action":{"type":"string","enum":["list_tools","call_tool"]},"tool_name":{"type":"string","minLength":1},"arguments":{"type":"object"}},"required":["action"],"if":{"properties":{"action":{"const":"call_tool"}}},"then":{"required":["tool_name"]}}`

// StepError is the error body of every /step failure: {"error":"<message>"}.
type StepError struct {
	Error string `json:"error"`
}

// StepValidationError is a 400 of POST /step; Message is the reference's text.
type StepValidationError struct{ Message string }

func (e *StepValidationError) Error() string { return e.Message }

// DecodeStepRequest validates a /step body in the order of the reference's error
// table and returns the first failure as a
// *StepValidationError carrying the exact message:
//
//   - not JSON: "Invalid JSON body";
//   - not an object: "body must be a JSON object";
//   - bad action: "Unknown action: <a>. Expected 'list_tools' or 'call_tool'.";
//   - call_tool without a non-empty string tool_name: "Missing or invalid 'tool_name' field";
//   - arguments present but not an object (null included): "'arguments' must be a JSON object".
//
// Absent arguments become {}.
func DecodeStepRequest(body []byte) (*StepRequest, error) {
	if !json.Valid(body) {
		return nil, &StepValidationError{"Invalid JSON body"}
	}
	if !isObject(body) {
		return nil, &StepValidationError{"body must be a JSON object"}
	}
	var w struct {
		Action    json.RawMessage `json:"action"`
		ToolName  json.RawMessage `json:"tool_name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, &StepValidationError{"Invalid JSON body"}
	}
	req := &StepRequest{}
	var action string
	if len(w.Action) > 0 && json.Unmarshal(w.Action, &action) == nil &&
		(action == StepActionListTools || action == StepActionCallTool) {
		req.Action = action
	} else {
		shown := "None"
		if len(w.Action) > 0 && !isNull(w.Action) {
			if json.Unmarshal(w.Action, &action) == nil {
				shown = action
			} else {
				shown = string(w.Action)
			}
		}
		return nil, &StepValidationError{fmt.Sprintf("Unknown action: %s. Expected 'list_tools' or 'call_tool'.", shown)}
	}
	if req.Action == StepActionListTools {
		return req, nil
	}
	if len(w.ToolName) == 0 || json.Unmarshal(w.ToolName, &req.ToolName) != nil || req.ToolName == "" {
		return nil, &StepValidationError{"Missing or invalid 'tool_name' field"}
	}
	if len(w.Arguments) == 0 {
		req.Arguments = json.RawMessage("{}")
	} else if !isObject(w.Arguments) {
		return nil, &StepValidationError{"'arguments' must be a JSON object"}
	} else {
		req.Arguments = w.Arguments
	}
	return req, nil
}
