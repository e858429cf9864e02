package protocol_test

import (
	"encoding/json"
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

// Parts are what the data plane and A2A messages carry. The helpers build
// the three kinds; unset fields are left out of the JSON.
func ExampleTextPart() {
	b, _ := json.Marshal(protocol.TextPart("Remember: buy milk"))
	fmt.Println(string(b))
	// Output: {"kind":"text","text":"Remember: buy milk"}
}

// A data part holds a JSON object, kept byte for byte so that numbers
// round-trip exactly.
func ExampleDataPart() {
	b, _ := json.Marshal(protocol.DataPart(json.RawMessage(`{"notes":["buy milk"],"id":12345678901234567890}`)))
	fmt.Println(string(b))
	// Output: {"kind":"data","data":{"notes":["buy milk"],"id":12345678901234567890}}
}

// A file part carries inline bytes (base64 on the wire) or a URI.
func ExampleFilePart() {
	b, _ := json.Marshal(protocol.FilePart(protocol.FileContent{Bytes: []byte("hello"), MimeType: "text/plain", Name: "hello.txt"}))
	fmt.Println(string(b))
	b, _ = json.Marshal(protocol.FilePart(protocol.FileContent{URI: "https://example.com/report.pdf"}))
	fmt.Println(string(b))
	// Output:
	// {"kind":"file","file":{"bytes":"aGVsbG8=","mimeType":"text/plain","name":"hello.txt"}}
	// {"kind":"file","file":{"uri":"https://example.com/report.pdf"}}
}

// Decoding validates a part and names the field at fault.
func ExamplePart_UnmarshalJSON() {
	var ps []protocol.Part
	err := json.Unmarshal([]byte(`[{"kind":"text","text":"hi"},{"kind":"data","data":[1,2]}]`), &ps)
	fmt.Println(err)
	err = json.Unmarshal([]byte(`[{"kind":"text","text":"hi"},{"kind":"data","data":{"a":1}}]`), &ps)
	fmt.Println(err, len(ps), ps[1].Kind, string(ps[1].Data))
	// Output:
	// data: must be a JSON object
	// <nil> 2 data {"a":1}
}
