package protocol

import (
	"errors"
	"strings"
)

// MCPConfigAddRequest is the body of mcp-config add
// (POST /ext/mcp-config): {"url", "headers"?, "name"?}.
type MCPConfigAddRequest struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Name    string            `json:"name,omitempty"`
}

// DecodeMCPConfigAdd decodes and validates an add body: unknown fields are
// refused and the url, trimmed, must be non-empty.
func DecodeMCPConfigAdd(b []byte) (*MCPConfigAddRequest, error) {
	var w struct {
		URL     *string           `json:"url"`
		Headers map[string]string `json:"headers"`
		Name    *string           `json:"name"`
	}
	if err := decodeStrictObject(b, &w); err != nil {
		return nil, err
	}
	if w.URL == nil {
		return nil, errors.New("url: required")
	}
	r := &MCPConfigAddRequest{URL: strings.TrimSpace(*w.URL), Headers: w.Headers}
	if r.URL == "" {
		return nil, errors.New("url: must not be empty")
	}
	if w.Name != nil {
		r.Name = strings.TrimSpace(*w.Name)
		if r.Name == "" {
			return nil, errors.New("name: must not be empty when given")
		}
	}
	return r, nil
}

// MCPConfigAddResponse answers add: {"status":"added","name","url"}.
type MCPConfigAddResponse struct {
	Status string `json:"status"`
	Name   string `json:"name"`
	URL    string `json:"url"`
}

// MCPConfigListResponse answers list (GET /ext/mcp-config). Header values
// are never exposed, only whether a server has any.
type MCPConfigListResponse struct {
	MCPServers map[string]MCPServerInfo `json:"mcp_servers"`
}

// MCPServerInfo is one entry of MCPConfigListResponse.
type MCPServerInfo struct {
	URL        string `json:"url"`
	HasHeaders bool   `json:"has_headers"`
}
