package envsdk_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/protocol"
)

// AddTool derives the tool's schema from its input struct; the card and
// MCP tools/list advertise the same descriptor.
func ExampleAddTool() {
	type AddIn struct {
		Item  string `json:"item" description:"The item to add."`
		Times int    `json:"times" description:"How many copies to add." default:"1"`
	}
	s := envsdk.New(&protocol.EnvCard{Name: "items"}, &envsdk.Options{Getenv: func(string) string { return "" }})
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_add_item", Description: "Add an item to the store."},
		func(ctx context.Context, req *envsdk.Request, in AddIn) (string, error) {
			return fmt.Sprintf("added %d × %s for %q", in.Times, in.Item, req.Caller.Role), nil
		})
	card, err := s.Card()
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(card.Capabilities.Tools)
	fmt.Println(string(b))
	// Output:
	// [{"name":"items_add_item","description":"Add an item to the store.","inputSchema":{"properties":{"item":{"description":"The item to add.","type":"string"},"times":{"default":1,"description":"How many copies to add.","type":"integer"}},"required":["item"],"type":"object"}}]
}

// Construction mistakes are returned, naming the offender, never panics.
func ExampleServer_Handler() {
	s := envsdk.New(&protocol.EnvCard{Name: "slack"}, &envsdk.Options{Getenv: func(string) string { return "" }})
	noop := func(context.Context, *envsdk.Request, struct{}) (string, error) { return "", nil }
	envsdk.AddTool(s, &envsdk.Tool{Name: "{service}_send"}, noop)
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_read"}, noop)
	envsdk.AddTool(s, &envsdk.Tool{Name: "slack_read"}, noop)
	_, err := s.Handler()
	fmt.Println(err)
	// Output:
	// envsdk: tool "{service}_send": the token {service} is no longer supported; use {environment_name}
	// envsdk: duplicate tool name "slack_read"
}
