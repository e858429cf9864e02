package protocol

// Extension URIs that appear on env, gateway and agent cards.
//
// URITrajectory and URITriggers exist on agent cards too, with a different
// shape: always branch on the kind of card.
const (
	URIIntake        = "urn:agentenv:intake/v1"
	URIDataObjects   = "urn:agentenv:data-objects/v1"
	URIGetInterfaces = "urn:agentenv:get-interfaces/v1"
	URIClock         = "urn:agentenv:clock/v1"
	URIStep          = "urn:agentenv:step/v1"
	URIState         = "urn:agentenv:state/v1"
	URIDisableTool   = "urn:agentenv:disable-tool/v1"
	URIEnableTool    = "urn:agentenv:enable-tool/v1"
	URITriggers      = "urn:agentenv:triggers/v1"
	URITrajectory    = "urn:agentenv:trajectory/v1"
	URISetErrors     = "urn:agentenv:set-errors/v1"
	URIExportAsFile  = "urn:agentenv:export-as-file/v1"
	URISetActingUser = "urn:agentenv:set-acting-user/v1"
)

// Well-known paths and defaults of an environment server.
const (
	EnvCardPath         = "/.well-known/agent-env.json"
	DataPlanePath       = "/agentenv"
	ExtensionPathPrefix = "/agentenv/ext/"
	DefaultMCPPath      = "/mcp"
	ReadyPath           = "/ready"
	DefaultEnvPort      = 18765
	EnvProtocolVersion  = "1.0"
	TransportJSONRPC    = "JSONRPC"
	TransportMCP        = "mcp"
)
