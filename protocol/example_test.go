package protocol_test

import (
	"errors"
	"fmt"

	"github.com/agentenv/agentenv/protocol"
)

// A consumer reads a served env card tolerantly and asks it where things
// are, rather than assuming the default paths.
func ExampleDecodeEnvCard() {
	card, err := protocol.DecodeEnvCard([]byte(`{
		"name": "email", "url": "/agentenv",
		"additionalInterfaces": [{"url": "/svc/email/mcp", "transport": "mcp"}],
		"capabilities": {"extensions": [{"uri": "urn:agentenv:clock/v1", "params": null}], "operations": ["data/add"]}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(card.MCPPath())
	fmt.Println(card.DataPlaneURL())
	fmt.Println(card.FindExtension(protocol.URIClock) != nil, card.FindExtension(protocol.URITriggers) != nil)
	fmt.Println(card.SupportsOperation("data/add"), card.SupportsOperation("data/reset"))

	_, err = protocol.DecodeEnvCard([]byte(`{"capabilities": {}}`))
	fmt.Println(err)
	// Output:
	// /svc/email/mcp
	// /agentenv
	// true false
	// true false
	// env card: name: required
}

// JSON-RPC errors are matched by code with errors.Is, never by message.
func ExampleError() {
	var err error = fmt.Errorf("data plane: %w", protocol.NewMethodNotFound("data/export"))
	fmt.Println(errors.Is(err, &protocol.Error{Code: protocol.CodeMethodNotFound}))
	fmt.Println(errors.Is(err, &protocol.Error{Code: protocol.CodeInvalidParams}))
	var rpc *protocol.Error
	if errors.As(err, &rpc) {
		fmt.Println(rpc.Code)
	}
	// Output:
	// true
	// false
	// -32601
}
