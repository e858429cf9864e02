package a2aclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentenv/agentenv/internal/a2aclient"
)

func task(parts string) *a2aclient.Task {
	var t a2aclient.Task
	_ = json.Unmarshal([]byte(`{"id":"t","status":{"state":"completed","message":{"kind":"message","role":"agent","messageId":"m","parts":`+parts+`}}}`), &t)
	return &t
}

func TestReadReply(t *testing.T) {
	r := a2aclient.ReadReply(task(`[{"kind":"text","text":"first"},{"kind":"text","text":"Done {\"a\":1} then {\"b\":2}"},
	  {"kind":"data","data":{"usage":{"tool_call_count":3}}}]`))
	if r.Text != `Done {"a":1} then {"b":2}` || r.ToolCallCount != 3 || string(r.StructuredOutput) != `{"b":2}` {
		t.Errorf("reply %+v", r)
	}
	r = a2aclient.ReadReply(task(`[{"kind":"text","text":"Retry later"},{"kind":"data","data":{"error_type":"agent_error","error_code":"rate","error_message":"busy","tool_call_count":1}},
	  {"kind":"data","data":{"structured_output":{"done":true}}}]`))
	if r.ErrorType != "agent_error" || r.ErrorCode != "rate" || r.ErrorMessage != "busy" || r.ToolCallCount != 1 || string(r.StructuredOutput) != `{"done":true}` {
		t.Errorf("failure reply %+v", r)
	}
	if r := a2aclient.ReadReply(nil); r.Text != "" || r.StructuredOutput != nil {
		t.Errorf("nil task %+v", r)
	}
}

func TestSupported(t *testing.T) {
	card := json.RawMessage(`{"capabilities":{"extensions":[{"uri":"urn:agentenv:agent-config/v1","params":{"methods":{"set":{"request":{"supported":["model","role"]}}}}}]}}`)
	if got := a2aclient.Supported(card); len(got) != 2 || got[0] != "model" {
		t.Errorf("supported %v", got)
	}
	if a2aclient.Supported(json.RawMessage(`{}`)) != nil || a2aclient.Advertises(card, "urn:agentenv:peer-agents/v1") {
		t.Errorf("absent extension reported")
	}
}

// TestPollTimeoutCancels: a task that never ends times out and is
// cancelled; a JSON-RPC error is returned as *RPCError.
func TestPollTimeoutCancels(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch req.Method {
		case "tasks/cancel":
			cancelled <- struct{}{}
		case "message/send":
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32602, "message": "TextPart content cannot be empty"}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"id": "t1", "status": map[string]any{"state": "working"}}})
	}))
	defer srv.Close()
	c := a2aclient.New(srv.URL, nil)
	_, err := c.Poll(context.Background(), "t1", 10*time.Millisecond, 50*time.Millisecond)
	if !errors.Is(err, a2aclient.ErrTimeout) {
		t.Fatalf("poll: %v", err)
	}
	select {
	case <-cancelled:
	default:
		t.Errorf("no tasks/cancel on timeout")
	}
	var rpc *a2aclient.RPCError
	if _, err := c.Send(context.Background(), "c", []a2aclient.Part{{Kind: "text"}}); !errors.As(err, &rpc) || rpc.Code != -32602 {
		t.Errorf("send: %v", err)
	}
	// A closed agent is unreachable.
	srv.Close()
	if _, err := c.Get(context.Background(), "t1"); !errors.Is(err, a2aclient.ErrUnreachable) {
		t.Errorf("closed agent: %v", err)
	}
}
