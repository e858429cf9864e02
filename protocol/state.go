package protocol

// StateResponse is the body of GET /state (urn:agentenv:state/v1). Tools
// are not filtered by role; ChangelogID is null without a service database.
type StateResponse struct {
	MCPServers  []StateServer        `json:"mcp_servers"`
	ChangelogID *int64               `json:"changelog_id"`
	Roles       map[string]RoleRules `json:"roles"`
}

// StateServer is one backing server (or the "gateway" pseudo-server of
// native tools) in a StateResponse. Errors (ours, additive) lists the
// discovery problems of that server, such as name collisions.
type StateServer struct {
	Name   string     `json:"name"`
	Tools  []StepTool `json:"tools"`
	Errors []string   `json:"errors,omitempty"`
}

// RoleRules is one role's own rule map as the gateway reports it: the keys
// set to disabled and to allowed, each sorted ("*" may appear).
type RoleRules struct {
	Disabled []string `json:"disabled"`
	Allowed  []string `json:"allowed"`
}
