// Package fakemodel is a fake OpenAI-compatible chat-completions server for
// tests. It plays a scripted sequence of replies (tool calls, texts, HTTP
// errors or hangs) on a loopback httptest server and records every request,
// so a test can drive an agent's model loop with no model and then assert
// on what the agent sent.
//
// The API is deliberately small:
//
//	m := fakemodel.New([]fakemodel.Reply{
//		{ToolCalls: []fakemodel.ToolCall{{Name: "add_item", Arguments: `{"name":"readme"}`}}},
//		{Text: "Added readme."},
//	}, nil)
//	defer m.Close()
//	// point the agent at m.URL() (it ends in /v1) with any API key
//	reqs := m.Requests() // one Request per chat completion call
//
// Only POST {URL}/chat/completions is served (non-streaming). A request that
// arrives after the script is exhausted gets HTTP 500, and the failure is
// also visible as Request.Exhausted.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Reply is one scripted answer. Exactly one of Text/ToolCalls (a normal
// completion; both may be set), Status (an HTTP error) or Hang is meant.
type Reply struct {
	// Text is the assistant message content.
	Text string
	// ToolCalls are function calls the assistant asks for. IDs are
	// generated ("call_<n>") when empty.
	ToolCalls []ToolCall
	// Usage is reported as-is; zero means prompt 10, completion 5 tokens.
	Usage *Usage
	// Status, when non-zero, answers with this HTTP status and an
	// OpenAI-style error body instead of a completion.
	Status int
	// Hang blocks the request until the client gives up (its context ends)
	// or the server is closed: use it to test model timeouts.
	Hang bool
}

// ToolCall is one function call of a reply.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the JSON text of the arguments ("{}" when empty).
	Arguments string
}

// Usage is the token usage of a reply.
type Usage struct {
	PromptTokens, CompletionTokens int
}

// Message is one message of a recorded request, flattened for assertions.
type Message struct {
	Role string `json:"role"`
	// Content is the text content (text parts joined with "\n").
	Content    string     `json:"content"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
}

// Request is one recorded chat completion request.
type Request struct {
	Model    string
	Messages []Message
	// Tools are the raw entries of the request's "tools" list.
	Tools []json.RawMessage
	// Header holds the HTTP headers (Authorization included: tests of
	// secret handling may need it).
	Header http.Header
	// Body is the raw request body.
	Body json.RawMessage
	// Exhausted is true when the script had no reply left for it.
	Exhausted bool
}

// ToolNames returns the function names of the request's tools.
func (r Request) ToolNames() []string {
	var names []string
	for _, raw := range r.Tools {
		var t struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &t) == nil {
			names = append(names, t.Function.Name)
		}
	}
	return names
}

// Options tunes a Server; nil means defaults.
type Options struct {
	// APIKey, when non-empty, is required as "Authorization: Bearer <key>";
	// other requests get 401.
	APIKey string
}

// Server is a running fake model endpoint.
type Server struct {
	srv    *httptest.Server
	apiKey string
	done   chan struct{}
	once   sync.Once

	mu     sync.Mutex
	script []Reply
	next   int
	reqs   []Request
	calls  int
}

// New starts a server that answers requests with script, in order.
func New(script []Reply, opts *Options) *Server {
	s := &Server{script: append([]Reply(nil), script...), done: make(chan struct{})}
	if opts != nil {
		s.apiKey = opts.APIKey
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serveChat)
	s.srv = httptest.NewServer(mux)
	return s
}

// URL is the base URL to configure an OpenAI client with; it ends in /v1.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Requests returns a copy of the requests received so far (requests
// refused with 401 for a wrong API key are not recorded and consume no reply).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Remaining is the number of scripted replies not yet played.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script) - s.next
}

// Close releases hanging requests and stops the server.
func (s *Server) Close() {
	s.once.Do(func() { close(s.done) })
	s.srv.Close()
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
		Stream   bool              `json:"stream"`
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err == nil {
		err = json.Unmarshal(raw, &body)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body")
		return
	}
	if s.apiKey != "" && r.Header.Get("Authorization") != "Bearer "+s.apiKey {
		writeError(w, http.StatusUnauthorized, "invalid api key")
		return
	}
	if body.Stream {
		writeError(w, http.StatusBadRequest, "fakemodel: streaming is not supported")
		return
	}
	req := Request{Model: body.Model, Tools: body.Tools, Header: r.Header.Clone(), Body: raw}
	for _, m := range body.Messages {
		req.Messages = append(req.Messages, flatten(m))
	}

	s.mu.Lock()
	var reply Reply
	if s.next < len(s.script) {
		reply = s.script[s.next]
		s.next++
	} else {
		req.Exhausted = true
	}
	s.reqs = append(s.reqs, req)
	s.calls++
	n := s.calls
	s.mu.Unlock()

	switch {
	case req.Exhausted:
		writeError(w, http.StatusInternalServerError, "fakemodel: script exhausted")
	case reply.Hang:
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
	case reply.Status != 0:
		writeError(w, reply.Status, fmt.Sprintf("fakemodel: scripted status %d", reply.Status))
	default:
		writeCompletion(w, body.Model, n, reply)
	}
}

func writeCompletion(w http.ResponseWriter, model string, n int, r Reply) {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	msg := map[string]any{"role": "assistant", "content": r.Text}
	finish := "stop"
	if len(r.ToolCalls) > 0 {
		calls := make([]call, len(r.ToolCalls))
		for i, tc := range r.ToolCalls {
			id := tc.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", n, i)
			}
			args := tc.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			calls[i] = call{ID: id, Type: "function", Function: fn{Name: tc.Name, Arguments: args}}
		}
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	u := Usage{PromptTokens: 10, CompletionTokens: 5}
	if r.Usage != nil {
		u = *r.Usage
	}
	if model == "" {
		model = "fake-model"
	}
	resp := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 0, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage": map[string]int{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens,
			"total_tokens": u.PromptTokens + u.CompletionTokens},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "fake_error"}})
}

// flatten decodes one chat message, joining text content parts.
func flatten(raw json.RawMessage) Message {
	var m struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	_ = json.Unmarshal(raw, &m)
	out := Message{Role: m.Role, ToolCallID: m.ToolCallID}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		out.Content = s
	} else {
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(m.Content, &parts) == nil {
			var texts []string
			for _, p := range parts {
				if p.Type == "text" {
					texts = append(texts, p.Text)
				}
			}
			out.Content = strings.Join(texts, "\n")
		}
	}
	for _, tc := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return out
}
