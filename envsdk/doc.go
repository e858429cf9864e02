// Package envsdk writes an AgentEnv environment server in Go: typed MCP
// tools, the JSON-RPC data plane (data/reset, data/add, data/get), REST
// extensions, the virtual clock and the env card, all on one HTTP listener
// (docs/protocol.md).
//
// It exists so that an env author writes plain Go functions over plain Go
// structs and gets a server that behaves like one built with the
// reference's Python SDK: schemas derived from struct tags, the caller's
// identity in the context, every error answered in the reference's shape.
// mcp-go runs underneath but never appears in the API, so the MCP library
// can change without breaking envs.
//
//	s := envsdk.New(&protocol.EnvCard{Name: "items"}, nil)
//	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_add_item", Description: "Add an item."},
//		func(ctx context.Context, req *envsdk.Request, in AddIn) (string, error) { ... })
//	s.HandleReset(store.Reset)
//	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
//	defer stop()
//	err := s.Run(ctx) // $MCP_HOST:$MCP_PORT, default 0.0.0.0:18765
//
// Registration mistakes (duplicate tool names, bad name tokens, duplicate
// extension routes) never panic: they are collected and returned, each
// naming the offender, by Handler, Card, Serve and Run.
//
// Routing uses net/http's method patterns rather than echo: the server
// has six fixed routes plus extension routes, ServeMux answers 405 for a
// wrong verb on its own, and mcp-go's handler is an http.Handler already.
package envsdk
