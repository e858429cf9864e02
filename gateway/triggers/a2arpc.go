package triggers

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/agentenv/agentenv/protocol"
)

// The executor speaks A2A 0.3 JSON-RPC on the wire rather than through
// a2a-go: the three calls it needs are small, and a2a-go's client pulls
// gRPC and protobuf into the gateway binary (several MB of the image).

type a2aMessage struct {
	Kind      string          `json:"kind"`
	Role      string          `json:"role"`
	MessageID string          `json:"messageId"`
	ContextID string          `json:"contextId,omitempty"`
	Parts     []protocol.Part `json:"parts"`
}

type a2aSendConfig struct {
	Blocking bool `json:"blocking"`
}

type a2aSendParams struct {
	Message       a2aMessage    `json:"message"`
	Configuration a2aSendConfig `json:"configuration"`
}

type a2aTaskID struct {
	ID string `json:"id"`
}

// a2aResult is the part of a Task or Message result the executor reads.
type a2aResult struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Status struct {
		State string `json:"state"`
	} `json:"status"`
}

func terminalTaskState(s string) bool {
	switch s {
	case "completed", "canceled", "failed", "rejected":
		return true
	}
	return false
}

func newMessageID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// maxRPCResponse bounds what the executor reads of one answer.
const maxRPCResponse = 16 << 20

// call posts one JSON-RPC request, bounded by RequestTimeout, and decodes
// the result into out. A JSON-RPC error comes back as a *protocol.Error.
func (x *A2AExecutor) call(ctx context.Context, endpoint, method string, params, out any) error {
	ctx, cancel := context.WithTimeout(ctx, x.opts.RequestTimeout)
	defer cancel()
	body, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      string `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", newMessageID(), method, params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := x.opts.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxRPCResponse))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d from %s", resp.StatusCode, endpoint)
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *protocol.Error `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("unreadable answer from %s: %w", endpoint, err)
	}
	if env.Error != nil {
		return env.Error
	}
	if len(env.Result) == 0 || string(env.Result) == "null" {
		return fmt.Errorf("answer from %s has no result", endpoint)
	}
	return json.Unmarshal(env.Result, out)
}
