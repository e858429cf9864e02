// Package mcpdial opens an initialized MCP client session over streamable
// HTTP, for the runner's one-off calls to an env server it reaches
// directly (no gateway): listing tools at deploy, calling one from a step.
//
//	c, err := mcpdial.Dial(ctx, "http://127.0.0.1:18765/mcp", "agentenv-runner")
//	if err != nil { ... }
//	defer c.Close()
//	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
package mcpdial

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Dial connects to the MCP endpoint u and initializes a session as client
// name; the caller closes the client.
func Dial(ctx context.Context, u, name string) (*client.Client, error) {
	c, err := client.NewStreamableHttpClient(u)
	if err != nil {
		return nil, fmt.Errorf("MCP %s: %w", u, err)
	}
	if err := c.Start(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("MCP %s: %w", u, err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: name, Version: "1"}}}); err != nil {
		c.Close()
		return nil, fmt.Errorf("MCP %s: initialize: %w", u, err)
	}
	return c, nil
}
