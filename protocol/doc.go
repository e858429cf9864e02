// Package protocol is the wire vocabulary of AgentEnv: the environment card,
// the JSON-RPC data plane and its Part union, error codes, identity headers
// and _meta keys, extension URIs, and the bodies of the gateway and agent
// extension APIs.
//
// It holds data types and their JSON round-trips only. It imports nothing
// but the standard library so that every other package of the module (and
// code outside it) can depend on it without pulling in an SDK.
//
// Reading is tolerant and writing is exact: every decoder accepts a missing
// key and an explicit null for optional fields, and every encoder emits the
// shapes the reference implementation emits (for example the env card is
// served with nulls included).
//
//	card, err := protocol.DecodeEnvCard(body)
//	mcpPath := card.MCPPath()          // "/mcp" unless the card declares another
//	ext := card.FindExtension(protocol.URIClock)
package protocol
