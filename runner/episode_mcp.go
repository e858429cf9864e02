package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/agentenv/agentenv/agentsdk"
)

// The per-turn MCP endpoint of the episode server: a minimal streamable
// HTTP MCP server (JSON responses, no server-initiated stream) in front of
// the turn's TurnTools. Why not hand the client the env's own MCP URL: the
// calls must go through the trainer agent, so that they are recorded in
// its trajectory and counted, carry its role, and stop at the turn's end.

var mcpVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

type mcpMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

func (s *EpisodeServer) mcp(w http.ResponseWriter, r *http.Request) {
	_, st := s.turn(w, r)
	if st == nil {
		return
	}
	server := r.PathValue("server")
	if _, ok := st.t.MCPServers[server]; !ok {
		writeAPIError(w, apiError{http.StatusNotFound, "unknown_mcp_server", fmt.Sprintf("turn %s has no MCP server %q", st.t.ID, server)})
		return
	}
	switch r.Method {
	case http.MethodPost:
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
		return
	default: // GET: no server-initiated stream
		w.Header().Set("Allow", "POST, DELETE")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		writeAPIError(w, apiError{http.StatusBadRequest, "bad_request", "read body: " + err.Error()})
		return
	}
	var msg mcpMessage
	if err := json.Unmarshal(body, &msg); err != nil || msg.JSONRPC != "2.0" {
		writeEpisodeJSON(w, http.StatusBadRequest, rpcError(nil, -32700, "parse error: expected one JSON-RPC 2.0 message"))
		return
	}
	if len(msg.ID) == 0 || string(msg.ID) == "null" { // a notification or a response
		w.WriteHeader(http.StatusAccepted)
		return
	}
	result, rerr := s.mcpCall(r, st, server, msg)
	if rerr != nil {
		writeEpisodeJSON(w, http.StatusOK, rerr)
		return
	}
	if msg.Method == "initialize" {
		w.Header().Set("Mcp-Session-Id", "episode-"+RandomHex(8))
	}
	writeEpisodeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
}

func rpcError(id json.RawMessage, code int, msg string) map[string]any {
	if id == nil {
		id = json.RawMessage("null")
	}
	return map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}}
}

func (s *EpisodeServer) mcpCall(r *http.Request, st *servedTurn, server string, msg mcpMessage) (any, map[string]any) {
	switch msg.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		v := "2025-06-18"
		if slices.Contains(mcpVersions, p.ProtocolVersion) {
			v = p.ProtocolVersion
		}
		return map[string]any{"protocolVersion": v, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "agentenv-episode-" + server, "version": "0.1.0"}}, nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list", "tools/call":
	default:
		return nil, rpcError(msg.ID, -32601, "method not found: "+msg.Method)
	}
	st.once.Do(func() { st.tools, st.err = st.t.Tools(context.WithoutCancel(r.Context())) })
	if st.err != nil {
		return nil, rpcError(msg.ID, -32000, st.err.Error())
	}
	if msg.Method == "tools/list" {
		tools, err := st.tools.ServerTools(r.Context(), server)
		if err != nil {
			return nil, rpcError(msg.ID, -32603, err.Error())
		}
		if tools == nil {
			tools = []agentsdk.Tool{}
		}
		return map[string]any{"tools": tools}, nil
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.Name == "" {
		return nil, rpcError(msg.ID, -32602, "tools/call: params.name is required")
	}
	res, err := st.tools.CallServerTool(r.Context(), server, p.Name, p.Arguments)
	if err != nil {
		code := -32603
		if errors.Is(err, ErrTurnEnded) || errors.Is(err, ErrTurnTimedOut) {
			code = -32000
		}
		return nil, rpcError(msg.ID, code, err.Error())
	}
	return res.Raw, nil
}
