package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProgressRelay: an agent (go-sdk) that asks for progress gets the
// child's notifications/progress under its own token, then the result; the
// child sees a gateway token, never the agent's. (The child's answer is
// written by hand: mcp-go's server may drop notifications sent just before
// a handler returns.)
func TestProgressRelay(t *testing.T) {
	c := startChild(t, "work", nil)
	var childTokens []json.RawMessage
	var mu sync.Mutex
	c.inter.Store(func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
				Meta struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) != nil || m.Method != "tools/call" {
			return false
		}
		tok := m.Params.Meta.ProgressToken
		mu.Lock()
		childTokens = append(childTokens, tok)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		if len(tok) > 0 {
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"someone-else\",\"progress\":9}}\n\n")
			for i := 1; i <= 3; i++ {
				fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":%d,\"total\":3}}\n\n", tok, i)
			}
		}
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"all done\"}]}}\n\n", m.ID)
		return true
	})
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)

	var got []float64
	var gmu sync.Mutex
	cl := sdk.NewClient(&sdk.Implementation{Name: "p", Version: "0"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			gmu.Lock()
			defer gmu.Unlock()
			if req.Params.ProgressToken == "agent-token-1" {
				got = append(got, req.Params.Progress)
			}
		}})
	cs, err := cl.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: tg.URL + "/mcp"},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &sdk.CallToolParams{Name: "work_echo", Arguments: map[string]any{}}
	params.SetProgressToken("agent-token-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != "all done" {
		t.Fatalf("call: %v %+v", err, res)
	}
	// go-sdk runs notification handlers asynchronously.
	waitFor(t, "three progress notifications", func() bool {
		gmu.Lock()
		defer gmu.Unlock()
		return len(got) >= 3
	})
	gmu.Lock()
	if len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("progress relayed to the agent: %v", got)
	}
	gmu.Unlock()
	mu.Lock()
	if len(childTokens) != 1 || string(childTokens[0]) == `"agent-token-1"` || len(childTokens[0]) == 0 {
		t.Fatalf("token seen by the child: %s", childTokens)
	}
	mu.Unlock()
	// Without a progress token the answer stays plain JSON and no token is sent.
	out := tg.mcpClient(t, "").call(t, "work_echo", map[string]any{})
	mu.Lock()
	defer mu.Unlock()
	if out.IsError || out.text() != "all done" || len(childTokens[1]) != 0 {
		t.Fatalf("plain call %+v, child token %s", out, childTokens[1])
	}
}
