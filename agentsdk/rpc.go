package agentsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/agentenv/agentenv/protocol"
)

// A2A error codes answered by the SDK itself (before a2a-go sees a request).
const (
	codeUnsupportedOperation = -32004
	maxRPCBody               = 64 << 20
)

// inbound carries what the HTTP layer parsed to the executor, through the
// request context (a2a-go runs executions in a context detached from the
// request's cancellation but keeping its values).
type inbound struct {
	header    http.Header
	messageID string
	parts     []protocol.Part
	// nonBlocking is set for message/send with configuration.blocking false.
	nonBlocking bool
}

type inboundKey struct{}

func inboundFrom(ctx context.Context) *inbound {
	in, _ := ctx.Value(inboundKey{}).(*inbound)
	return in
}

// rpcHandler fronts a2a-go's JSON-RPC handler. It
//   - validates message/send and message/stream params at the boundary
//     (-32602 naming the field, before any task exists) and keeps the
//     parsed parts so data parts reach the agent with exact JSON numbers;
//   - refuses streaming methods on a non-streaming agent (-32004);
//   - works around a2a-go v0.3.3 not copying HTTP headers into the call
//     context: it builds one from the request headers, activates the
//     requested extensions the card declares, and echoes them in
//     X-A2A-Extensions on the response.
func (s *Server) rpcHandler(inner http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRPCBody+1))
		if err != nil {
			writeRPCError(w, nil, protocol.CodeInvalidRequest, "request body could not be read")
			return
		}
		if len(body) > maxRPCBody {
			writeRPCError(w, nil, protocol.CodeInvalidRequest, "request body is too large")
			return
		}
		var env struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			if json.Valid(body) {
				writeRPCError(w, nil, protocol.CodeInvalidRequest, "Invalid request: the body must be one JSON-RPC request object")
				return
			}
			writeRPCError(w, nil, protocol.CodeParseError, "Parse error: the body is not valid JSON")
			return
		}
		if env.JSONRPC != "2.0" || env.Method == "" {
			writeRPCError(w, env.ID, protocol.CodeInvalidRequest, "Invalid request: jsonrpc must be \"2.0\" and method is required")
			return
		}
		in := &inbound{header: r.Header.Clone()}
		switch env.Method {
		case "message/stream", "tasks/resubscribe":
			if !s.streaming {
				writeRPCError(w, env.ID, codeUnsupportedOperation, "Unsupported operation: this agent does not stream")
				return
			}
		}
		switch env.Method {
		case "tasks/get", "tasks/cancel", "tasks/resubscribe":
			if err := validateTaskIDParams(env.Params); err != nil {
				writeRPCError(w, env.ID, protocol.CodeInvalidParams, "Invalid params: "+err.Error())
				return
			}
		}
		if env.Method == "message/send" || env.Method == "message/stream" {
			id, parts, blocking, err := validateSendParams(env.Params)
			if err != nil {
				writeRPCError(w, env.ID, protocol.CodeInvalidParams, "Invalid params: "+err.Error())
				return
			}
			in.messageID, in.parts = id, parts
			in.nonBlocking = env.Method == "message/send" && !blocking
		}
		ctx, cc := a2asrv.WithCallContext(r.Context(), a2asrv.NewRequestMeta(r.Header))
		for _, uri := range requestedExtensions(r.Header) {
			if s.declares(uri) {
				cc.Extensions().Activate(&a2a.AgentExtension{URI: uri})
			}
		}
		ctx = context.WithValue(ctx, inboundKey{}, in)
		r2 := r.WithContext(ctx)
		r2.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(&extWriter{ResponseWriter: w, cc: cc}, r2)
	})
}

func requestedExtensions(h http.Header) []string {
	var out []string
	for _, v := range h.Values(protocol.HeaderA2AExtensions) {
		for _, u := range strings.Split(v, ",") {
			if u = strings.TrimSpace(u); u != "" {
				out = append(out, u)
			}
		}
	}
	return out
}

func (s *Server) declares(uri string) bool {
	return slices.ContainsFunc(s.extensions, func(e *extension) bool { return e.uri == uri })
}

// extWriter sets the activated extensions header and a JSON content type
// (a2a-go leaves it unset for plain responses) on the first write.
type extWriter struct {
	http.ResponseWriter
	cc      *a2asrv.CallContext
	written bool
}

func (w *extWriter) prepare() {
	if w.written {
		return
	}
	w.written = true
	if uris := w.cc.Extensions().ActivatedURIs(); len(uris) > 0 {
		w.Header().Set(protocol.HeaderA2AExtensions, strings.Join(uris, ", "))
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
}

func (w *extWriter) WriteHeader(code int) { w.prepare(); w.ResponseWriter.WriteHeader(code) }

func (w *extWriter) Write(b []byte) (int, error) { w.prepare(); return w.ResponseWriter.Write(b) }

// Flush passes through for SSE.
func (w *extWriter) Flush() {
	w.prepare()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *extWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func writeRPCError(w http.ResponseWriter, id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

// validateSendParams checks MessageSendParams and returns the message id
// and its parts. Messages name fields, never echo values.
func validateSendParams(raw json.RawMessage) (id string, parts []protocol.Part, blocking bool, err error) {
	blocking = true
	id, parts, cfgBlocking, err := validateSendParamsInner(raw)
	if cfgBlocking != nil {
		blocking = *cfgBlocking
	}
	return id, parts, blocking, err
}

func validateSendParamsInner(raw json.RawMessage) (string, []protocol.Part, *bool, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return "", nil, nil, errors.New("params: must be an object")
	}
	var p struct {
		Message       json.RawMessage `json:"message"`
		Configuration json.RawMessage `json:"configuration"`
		Metadata      json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", nil, nil, errors.New("params: must be an object")
	}
	if len(p.Message) == 0 || string(p.Message) == "null" {
		return "", nil, nil, errors.New("message: required")
	}
	var m struct {
		MessageID *string           `json:"messageId"`
		Role      *string           `json:"role"`
		Parts     []json.RawMessage `json:"parts"`
		Metadata  json.RawMessage   `json:"metadata"`
		ContextID *string           `json:"contextId"`
		TaskID    *string           `json:"taskId"`
	}
	if p.Message[0] != '{' || json.Unmarshal(p.Message, &m) != nil {
		return "", nil, nil, errors.New("message: must be an object with messageId, role and parts")
	}
	switch {
	case m.MessageID == nil || *m.MessageID == "":
		return "", nil, nil, errors.New("message.messageId: required")
	case m.Role == nil || (*m.Role != "user" && *m.Role != "agent"):
		return "", nil, nil, errors.New(`message.role: must be "user" or "agent"`)
	case len(m.Parts) == 0:
		return "", nil, nil, errors.New("message.parts: at least one part is required")
	case len(m.Metadata) > 0 && string(m.Metadata) != "null" && m.Metadata[0] != '{':
		return "", nil, nil, errors.New("message.metadata: must be an object")
	}
	var blocking *bool
	parts := make([]protocol.Part, len(m.Parts))
	for i, rp := range m.Parts {
		if err := json.Unmarshal(rp, &parts[i]); err != nil {
			return "", nil, nil, fmt.Errorf("message.parts[%d]: %v", i, err)
		}
		if parts[i].Kind == protocol.PartKindText && parts[i].Text == "" {
			return "", nil, nil, fmt.Errorf("message.parts[%d]: TextPart content cannot be empty", i)
		}
	}
	if len(p.Configuration) > 0 && string(p.Configuration) != "null" {
		var c struct {
			Blocking            *bool    `json:"blocking"`
			HistoryLength       *int     `json:"historyLength"`
			AcceptedOutputModes []string `json:"acceptedOutputModes"`
		}
		if err := json.Unmarshal(p.Configuration, &c); err != nil {
			return "", nil, nil, errors.New("configuration: blocking must be a boolean, historyLength an integer, acceptedOutputModes strings")
		}
		blocking = c.Blocking
	}
	if len(p.Metadata) > 0 && string(p.Metadata) != "null" && p.Metadata[0] != '{' {
		return "", nil, nil, errors.New("metadata: must be an object")
	}
	return *m.MessageID, parts, blocking, nil
}

// validateTaskIDParams checks {id, historyLength?, metadata?}.
func validateTaskIDParams(raw json.RawMessage) error {
	var p struct {
		ID            *string         `json:"id"`
		HistoryLength *int            `json:"historyLength"`
		Metadata      json.RawMessage `json:"metadata"`
	}
	if len(raw) == 0 || raw[0] != '{' {
		return errors.New("params: must be an object")
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return errors.New("params: id must be a string, historyLength an integer")
	}
	if p.ID == nil || *p.ID == "" {
		return errors.New("id: required")
	}
	if len(p.Metadata) > 0 && string(p.Metadata) != "null" && p.Metadata[0] != '{' {
		return errors.New("metadata: must be an object")
	}
	return nil
}

// requestHandler makes non-blocking sends answer at once with the task in
// state submitted (a2a-go answers from its store, which may already have
// moved on).
type requestHandler struct {
	a2asrv.RequestHandler
	submitted *lru[*a2a.Task] // task id -> snapshot of the submitted task written by the executor
}

func (h requestHandler) OnSendMessage(ctx context.Context, params *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	if params == nil || params.Config == nil || params.Config.Blocking == nil || *params.Config.Blocking {
		return h.RequestHandler.OnSendMessage(ctx, params)
	}
	for ev, err := range h.RequestHandler.OnSendMessageStream(ctx, params) {
		if err != nil {
			return nil, err
		}
		if m, ok := ev.(*a2a.Message); ok {
			return m, nil
		}
		id := ev.TaskInfo().TaskID
		if snap, ok := h.submitted.take(string(id)); ok {
			return snap, nil
		}
		return h.RequestHandler.OnGetTask(ctx, &a2a.TaskQueryParams{ID: id})
	}
	return nil, a2a.ErrInternalError
}
