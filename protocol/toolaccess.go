package protocol

import "encoding/json"

// ToolAccessRequest is the body of POST /tools/disable and /tools/enable
// (urn:agentenv:disable-tool/v1, urn:agentenv:enable-tool/v1). Role "*" is
// the global map; All means the tools value was the string "*".
type ToolAccessRequest struct {
	Role  string
	Tools []string
	All   bool
}

// ToolAccessResponse is the 200 answer: that role's own map only.
type ToolAccessResponse struct {
	Role     string   `json:"role"`
	Disabled []string `json:"disabled"`
	Allowed  []string `json:"allowed"`
}

// ToolAccessError is a 400 of the role-rule routes; Message is the reference's text.
type ToolAccessError struct{ Message string }

func (e *ToolAccessError) Error() string { return e.Message }

// DecodeToolAccessRequest validates a role-rule body. Failures are
// *ToolAccessError values with the reference's exact messages:
// "Invalid JSON body", "body must be a JSON object",
// "Missing or invalid 'role' field" and
// "'tools' must be a list of strings or the string '*'".
func DecodeToolAccessRequest(body []byte) (*ToolAccessRequest, error) {
	if !json.Valid(body) {
		return nil, &ToolAccessError{"Invalid JSON body"}
	}
	if !isObject(body) {
		return nil, &ToolAccessError{"body must be a JSON object"}
	}
	var w struct {
		Role  json.RawMessage `json:"role"`
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, &ToolAccessError{"Invalid JSON body"}
	}
	req := &ToolAccessRequest{}
	if len(w.Role) == 0 || json.Unmarshal(w.Role, &req.Role) != nil || req.Role == "" {
		return nil, &ToolAccessError{"Missing or invalid 'role' field"}
	}
	bad := &ToolAccessError{"'tools' must be a list of strings or the string '*'"}
	var s string
	if len(w.Tools) > 0 && json.Unmarshal(w.Tools, &s) == nil {
		if s != "*" {
			return nil, bad
		}
		req.All = true
		return req, nil
	}
	if len(w.Tools) == 0 || isNull(w.Tools) {
		return nil, bad
	}
	var items []json.RawMessage
	if err := json.Unmarshal(w.Tools, &items); err != nil {
		return nil, bad
	}
	req.Tools = make([]string, 0, len(items))
	for _, it := range items {
		var t string
		if err := json.Unmarshal(it, &t); err != nil {
			return nil, bad
		}
		req.Tools = append(req.Tools, t)
	}
	return req, nil
}
