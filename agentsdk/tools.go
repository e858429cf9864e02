package agentsdk

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Model APIs that ToolDefinitions renders for.
const (
	APIOpenAIChat      = "openai_chat"
	APIOpenAIResponses = "openai_responses"
	APIAnthropic       = "anthropic"
)

// ErrUnknownAPI is returned by ToolDefinitions for an unknown api.
var ErrUnknownAPI = errors.New("agentsdk: unknown model api")

// ToolDefinitions renders MCP tool descriptors as a model API's tool
// list. Schemas are deep-copied; a missing schema becomes an empty object
// schema.
func ToolDefinitions(tools []Tool, api string) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(tools))
	for _, t := range tools {
		schema, err := copySchema(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		switch api {
		case APIOpenAIChat:
			out = append(out, map[string]any{"type": "function", "function": map[string]any{
				"name": t.Name, "description": t.Description, "parameters": schema}})
		case APIOpenAIResponses:
			out = append(out, map[string]any{"type": "function", "name": t.Name, "description": t.Description, "parameters": schema})
		case APIAnthropic:
			out = append(out, map[string]any{"name": t.Name, "description": t.Description, "input_schema": schema})
		default:
			return nil, fmt.Errorf("%w: %q", ErrUnknownAPI, api)
		}
	}
	return out, nil
}

func copySchema(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errors.New("input schema is not a JSON object")
	}
	return m, nil
}

// QualifiedToolName is the name an agent exposing tools of several MCP
// servers gives a tool: mcp__<server>__<tool>.
func QualifiedToolName(server, tool string) string { return "mcp__" + server + "__" + tool }
