package email_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envclient"
	"github.com/agentenv/agentenv/examples/envs/email"
	"github.com/agentenv/agentenv/protocol"
)

// The quick start: serve the env, seed it over the data plane as the
// runner does, and call a tool over MCP as an agent does.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	s, _ := email.New(&envsdk.Options{Getenv: func(string) string { return "" }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan error)
	go func() { done <- s.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	env := envclient.New(base, nil)
	card, _ := env.GetCard(ctx)
	fmt.Println(card.Name, card.Capabilities.Operations)
	_ = env.AddData(ctx, []protocol.Part{protocol.DataPart(json.RawMessage(
		`{"messages":[{"id":"a1","from":"boss@example.com","to":["me@example.com"],"subject":"Quarterly report","sent_at":"2026-02-27T10:00:00Z"}]}`))})

	tr, _ := transport.NewStreamableHTTP(base + card.MCPPath())
	c := client.NewClient(tr)
	_ = c.Start(ctx)
	_, _ = c.Initialize(ctx, mcp.InitializeRequest{})
	req := mcp.CallToolRequest{}
	req.Params.Name = "email_search"
	req.Params.Arguments = map[string]any{"query": "report"}
	res, _ := c.CallTool(ctx, req)
	fmt.Println(res.Content[0].(mcp.TextContent).Text)

	_ = c.Close()
	stop()
	<-done
	// Output:
	// email [data/reset data/add data/get]
	// {"messages":[{"id":"a1","from":"boss@example.com","to":["me@example.com"],"subject":"Quarterly report","sent_at":"2026-02-27T10:00:00Z","read":false}]}
}
