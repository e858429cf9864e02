package envsdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentenv/agentenv/protocol"
)

// Tool describes an MCP tool. Name may contain the token
// {environment_name}, replaced by the resolved card name.
type Tool struct {
	Name string
	// Description is used verbatim on the card and in tools/list.
	Description string
	// InputSchema, when set, replaces the schema derived from In.
	InputSchema json.RawMessage
	// OutputSchema, when set, replaces the schema derived from Out (derived
	// only when Out is a struct).
	OutputSchema json.RawMessage
}

// Request is what a tool or extension handler receives besides its input.
type Request struct {
	ToolContext
	// Header holds the HTTP headers of the request that carried the call.
	Header http.Header
}

// ToolResult is a raw tool result. A handler whose Out is ToolResult or
// *ToolResult returns it verbatim; the OnToolCall hook uses it to refuse.
type ToolResult struct {
	// Text is the text content (one text item; none when empty).
	Text string
	// Structured is the structuredContent, when not nil.
	Structured any
	IsError    bool
}

// Refusal is the usual hook answer: an isError result with a text.
func Refusal(text string) *ToolResult { return &ToolResult{Text: text, IsError: true} }

// Hook runs before every tools/call of a registered tool. A nil
// result and nil error let the call proceed; a result is returned verbatim
// and the tool does not run; an error becomes an isError result.
type Hook func(ctx context.Context, tc ToolContext) (*ToolResult, error)

// ToolHandler is the typed handler of AddTool. A plain error becomes an
// isError result carrying its text; a *protocol.Error becomes a JSON-RPC
// error.
type ToolHandler[In, Out any] func(ctx context.Context, req *Request, in In) (Out, error)

type toolReg struct {
	tool    Tool
	schema  json.RawMessage
	output  json.RawMessage
	handler func(ctx context.Context, req *Request, args json.RawMessage) (*ToolResult, error)
}

// AddTool registers a typed tool. The input schema is derived from In
// and the output schema from Out when Out is a struct. Mistakes
// (a nil tool, an empty name, In that is not an object, a schema that
// cannot be derived) are recorded and returned by Handler, Serve and Run,
// as are bad name tokens and duplicates found once the name is resolved.
func AddTool[In, Out any](s *Server, t *Tool, h ToolHandler[In, Out]) {
	if t == nil || t.Name == "" || h == nil {
		s.fail(errors.New("envsdk: AddTool: tool, tool name and handler are required"))
		return
	}
	reg := &toolReg{tool: *t}
	if len(t.InputSchema) > 0 {
		reg.schema = t.InputSchema
	} else {
		sch, err := objectSchema(reflect.TypeFor[In]())
		if err != nil {
			s.fail(fmt.Errorf("envsdk: tool %s: input: %w", t.Name, err))
			return
		}
		reg.schema, _ = json.Marshal(sch)
	}
	if len(t.OutputSchema) > 0 {
		reg.output = t.OutputSchema
	} else if ot := derefType(reflect.TypeFor[Out]()); ot.Kind() == reflect.Struct && ot != reflect.TypeFor[ToolResult]() && ot != timeType {
		sch, err := objectSchema(ot)
		if err != nil {
			s.fail(fmt.Errorf("envsdk: tool %s: output: %w", t.Name, err))
			return
		}
		reg.output, _ = json.Marshal(sch)
	}
	structured := len(reg.output) > 0
	reg.handler = func(ctx context.Context, req *Request, args json.RawMessage) (*ToolResult, error) {
		var in In
		if err := applyDefaults(reflect.ValueOf(&in)); err != nil {
			return nil, err
		}
		if len(args) > 0 && string(args) != "null" {
			if err := json.Unmarshal(args, &in); err != nil {
				return Refusal("invalid arguments: " + argDecodeWords(err)), nil
			}
		}
		out, err := h(ctx, req, in)
		if err != nil {
			var pe *protocol.Error
			if errors.As(err, &pe) {
				return nil, pe
			}
			return &ToolResult{Text: err.Error(), IsError: true}, nil
		}
		return outputResult(out, structured)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools = append(s.tools, reg)
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// outputResult renders a handler's output: strings as text, ToolResult
// verbatim, anything else as JSON text (and structuredContent when an
// output schema is declared).
func outputResult(out any, structured bool) (*ToolResult, error) {
	switch v := out.(type) {
	case ToolResult:
		return &v, nil
	case *ToolResult:
		if v == nil {
			return &ToolResult{}, nil
		}
		return v, nil
	case string:
		return &ToolResult{Text: v}, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode tool output: %w", err)
	}
	r := &ToolResult{Text: string(b)}
	if structured {
		r.Structured = json.RawMessage(b)
	}
	return r, nil
}

var tokenRE = regexp.MustCompile(`\{[^{}]*\}`)

// resolveToolName replaces {environment_name}; any other brace is an error.
func resolveToolName(name, envName string) (string, error) {
	var bad error
	out := tokenRE.ReplaceAllStringFunc(name, func(tok string) string {
		switch tok {
		case "{environment_name}":
			return envName
		case "{service}":
			bad = fmt.Errorf("envsdk: tool %q: the token {service} is no longer supported; use {environment_name}", name)
		default:
			if bad == nil {
				bad = fmt.Errorf("envsdk: tool %q: unknown token %s (only {environment_name} is replaced)", name, tok)
			}
		}
		return tok
	})
	if bad != nil {
		return "", bad
	}
	if strings.ContainsAny(out, "{}") {
		return "", fmt.Errorf("envsdk: tool %q: unbalanced brace in name", name)
	}
	return out, nil
}

// mcpToolHandler adapts a registered tool to mcp-go: it binds the tool
// context, runs the hook, then the typed handler.
func (s *Server) mcpToolHandler(name string, reg *toolReg, argSchema *jsonschema.Schema) server.ToolHandlerFunc {
	return func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var meta map[string]any
		if r.Params.Meta != nil {
			meta = r.Params.Meta.AdditionalFields
		}
		sessionID := r.Header.Get(protocol.HeaderMCPSessionID)
		if sessionID == "" {
			if cs := server.ClientSessionFromContext(ctx); cs != nil {
				sessionID = cs.SessionID()
			}
		}
		args := r.Params.RawArguments
		if len(args) == 0 && r.Params.Arguments != nil {
			args, _ = json.Marshal(r.Params.Arguments)
		}
		if msg := checkArgs(argSchema, args); msg != "" {
			return mcp.NewToolResultError(msg), nil
		}
		tc := ToolContext{
			Caller:    resolveCaller(meta, r.Header, sessionID),
			Tool:      name,
			Arguments: append(json.RawMessage(nil), args...),
			CallID:    newCallID(),
			Transport: TransportMCP,
		}
		ctx = WithToolContext(s.withServer(ctx), tc)
		if s.hook != nil {
			res, err := runHook(ctx, s.hook, tc)
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			if res != nil {
				return toMCPResult(res), nil
			}
		}
		res, err := safeCall(ctx, reg, &Request{ToolContext: tc, Header: r.Header}, args)
		if err != nil {
			return nil, err
		}
		return toMCPResult(res), nil
	}
}

func runHook(ctx context.Context, h Hook, tc ToolContext) (res *ToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("on_tool_call hook panicked: %v", p)
		}
	}()
	return h(ctx, tc)
}

// safeCall runs a tool handler; a panic becomes an isError result so one
// bad tool cannot take the server down.
func safeCall(ctx context.Context, reg *toolReg, req *Request, args json.RawMessage) (res *ToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = Refusal(fmt.Sprintf("tool %s panicked: %v", req.Tool, p)), nil
		}
	}()
	return reg.handler(ctx, req, args)
}

func toMCPResult(r *ToolResult) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Content: []mcp.Content{}, IsError: r.IsError}
	if r.Text != "" || r.Structured == nil {
		out.Content = append(out.Content, mcp.NewTextContent(r.Text))
	}
	if r.Structured != nil {
		out.StructuredContent = r.Structured
	}
	return out
}
