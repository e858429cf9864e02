package jsonscan_test

import (
	"errors"
	"fmt"

	"github.com/agentenv/agentenv/internal/jsonscan"
)

func ExampleObject() {
	body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"items_echo","arguments":{"msg":"hello"}}}`)

	var method string
	var id, params []byte
	err := jsonscan.Object(body, func(key, value []byte) error {
		switch string(key) {
		case "method":
			s, ok := jsonscan.String(value)
			if !ok {
				return errors.New("method is not a string")
			}
			method = s
		case "id":
			id = value
		case "params":
			params = value
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(method)
	fmt.Printf("%s\n", id)
	fmt.Printf("%s\n", params)
	fmt.Println(jsonscan.KindOf(params) == jsonscan.KindObject)

	// A document is checked to its end, so members seen before an error
	// must not be acted on.
	err = jsonscan.Object([]byte(`{"method":"tools/call"} trailing`), func(key, value []byte) error { return nil })
	fmt.Println(err)
	// Output:
	// tools/call
	// 42
	// {"name":"items_echo","arguments":{"msg":"hello"}}
	// true
	// jsonscan: invalid character 't' after top-level value at offset 24
}
