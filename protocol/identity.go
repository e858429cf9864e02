package protocol

import "strings"

// Identity of a caller as it travels on the wire.
const (
	// HeaderRole carries the caller's role on HTTP requests. Missing or blank
	// means the role "default".
	HeaderRole = "AgentEnv-Role"
	// HeaderMCPSessionID is the streamable-HTTP MCP session header.
	HeaderMCPSessionID = "Mcp-Session-Id"
	// HeaderMCPProtocolVersion is sent by MCP clients after initialize.
	HeaderMCPProtocolVersion = "MCP-Protocol-Version"

	// MetaRole and MetaSession are the _meta keys a gateway stamps on the
	// tools/call requests it forwards, because one upstream MCP session is
	// shared by every agent behind it.
	MetaRole    = "agentenv.io/role"
	MetaSession = "agentenv.io/session"

	// DefaultRole is the gateway's "no role forwarded" marker.
	DefaultRole = "default"
)

// NormalizeRole maps a received role to the role an environment acts on:
// empty, whitespace-only and "default" all mean no role ("").
func NormalizeRole(raw string) string {
	if strings.TrimSpace(raw) == "" || raw == DefaultRole {
		return ""
	}
	return raw
}

// GatewayRole maps a received role header value to the role a gateway
// attributes a request to: blank means DefaultRole.
func GatewayRole(raw string) string {
	if strings.TrimSpace(raw) == "" {
		return DefaultRole
	}
	return raw
}
