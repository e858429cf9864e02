package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// Source says at which boundary a tool call entered the gateway.
type Source int

// Call sources.
const (
	// SourceMCP is a tools/call on /mcp.
	SourceMCP Source = iota
	// SourceStep is a call_tool on POST /step.
	SourceStep
	// SourceInternal is a call made by the gateway itself (trigger
	// actions and checks): no role rules, no trajectory, no triggers.
	SourceInternal
)

func (s Source) String() string {
	switch s {
	case SourceMCP:
		return "mcp"
	case SourceStep:
		return "step"
	default:
		return "internal"
	}
}

// ToolCall is one tool call as the gateway's call chain sees it.
type ToolCall struct {
	Source Source
	// Role is the attributed role ("default" when the caller sent none);
	// empty on internal calls.
	Role string
	// Session is the 32-hex key of the inbound MCP session (/mcp only).
	Session string
	// Tool is the exposed tool name.
	Tool string
	// Arguments are the caller's argument bytes, forwarded verbatim; nil
	// when the caller sent none.
	Arguments json.RawMessage
	// As is the role stamped on an internal call (a trigger action's "as");
	// empty means no _meta at all.
	As string
	// ProgressToken is the agent's _meta.progressToken (raw JSON) when it
	// asked for progress, and Progress receives each relayed
	// notifications/progress (with the agent's token) while the call runs.
	ProgressToken json.RawMessage
	Progress      func(notification []byte)
}

// ToolResult is a completed call: the CallToolResult JSON exactly as the
// child (or native tool) produced it.
type ToolResult struct {
	Raw     json.RawMessage
	IsError bool
	// ChangelogBefore and ChangelogID bracket the call; nil without
	// a service database, and always nil for native tools.
	ChangelogBefore *int64
	ChangelogID     *int64
	// Native is set for gateway-native tools.
	Native bool
	// Recorded, when non-nil, is what the trajectory records instead of
	// Raw (NativeResult.Recorded).
	Recorded json.RawMessage
}

// CallHandler runs a tool call. An error means the call did not produce a
// CallToolResult (refused, unknown, timed out, transport failure); each
// boundary renders it in its own way (isError on /mcp, a status on /step).
type CallHandler func(ctx context.Context, call *ToolCall) (*ToolResult, error)

// Middleware wraps a CallHandler. The gateway's concerns (role rules,
// trajectory, trigger evaluation, the consistent-mode lock) are one chain of
// Middleware around the dispatcher, so adding one is one line.
type Middleware func(CallHandler) CallHandler

// Chain applies mws so that the first one is outermost.
func Chain(h CallHandler, mws ...Middleware) CallHandler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// Sentinel kinds of call errors; a *CallError unwraps to one of them.
var (
	ErrToolDisabled      = errors.New("tool disabled for role")
	ErrUnknownTool       = errors.New("unknown tool")
	ErrToolTimeout       = errors.New("tool call timed out")
	ErrDiscoveryPending  = errors.New("tool discovery has not completed")
	ErrChildCall         = errors.New("child call failed")
	ErrNativeToolFailure = errors.New("native tool failed")
)

// CallError is a call that produced no CallToolResult.
type CallError struct {
	Kind error
	Tool string
	Role string
	// Detail is the underlying failure text.
	Detail string
	// ErrorKind names the failure class for /step's 500 text.
	ErrorKind string
	Timeout   time.Duration
}

func (e *CallError) Error() string {
	switch e.Kind {
	case ErrToolDisabled:
		return fmt.Sprintf("Tool '%s' is disabled for role '%s'", e.Tool, e.Role)
	case ErrUnknownTool:
		return "Unknown tool: " + e.Tool
	case ErrToolTimeout:
		return fmt.Sprintf("Tool '%s' timed out after %.1fs", e.Tool, e.Timeout.Seconds())
	case ErrDiscoveryPending:
		return discoveryPendingMessage
	}
	return e.Detail
}

// Unwrap returns the kind sentinel.
func (e *CallError) Unwrap() error { return e.Kind }

const discoveryPendingMessage = "Tool discovery has not completed. Internal MCP servers may be unavailable."

// mcpText is the isError text of a failed call on /mcp.
func (e *CallError) mcpText() string {
	switch e.Kind {
	case ErrToolDisabled, ErrUnknownTool:
		return e.Error()
	case ErrToolTimeout:
		return fmt.Sprintf("Error executing tool %s: timed out after %.1fs", e.Tool, e.Timeout.Seconds())
	}
	return fmt.Sprintf("Error executing tool %s: %s", e.Tool, e.Detail)
}

// errorResult renders text as an isError CallToolResult.
func errorResult(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": text}},
		"isError": true,
	})
	return b
}

// textResult renders a native tool's plain value as one text content
// holding its JSON.
func textResult(v any) (json.RawMessage, error) {
	inner, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": string(inner)}},
		"isError": false,
	})
}

// resultIsError reads isError from a raw CallToolResult.
func resultIsError(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(`"isError"`)) {
		return false // the common case: children omit isError:false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(raw, &r)
	return r.IsError
}

// metaFor renders the _meta object stamped on the child call (docs/protocol.md,
// "Identity"); nil means none. Nothing the caller sent in its own _meta is copied.
func metaFor(call *ToolCall) []byte {
	b := make([]byte, 0, 96)
	switch {
	case call.Source == SourceMCP:
		b = append(b, `{"`+protocol.MetaRole+`":`...)
		b = appendJSONString(b, call.Role)
		b = append(b, `,"`+protocol.MetaSession+`":`...)
		b = appendJSONString(b, call.Session)
	case call.Source == SourceStep:
		b = append(b, `{"`+protocol.MetaRole+`":`...)
		b = appendJSONString(b, call.Role)
	case call.As != "":
		b = append(b, `{"`+protocol.MetaRole+`":`...)
		b = appendJSONString(b, call.As)
	default:
		return nil
	}
	return append(b, '}')
}

// withProgressToken adds "progressToken" to a rendered _meta object (nil
// means none yet).
func withProgressToken(meta, tok []byte) []byte {
	if len(meta) == 0 {
		return []byte(`{"progressToken":` + string(tok) + `}`)
	}
	out := append([]byte{}, meta[:len(meta)-1]...)
	out = append(out, `,"progressToken":`...)
	out = append(out, tok...)
	return append(out, '}')
}

// roleMiddleware refuses calls the role has disabled, before existence is
// checked (a disabled unknown name is refused as disabled).
func (g *Gateway) roleMiddleware(next CallHandler) CallHandler {
	return func(ctx context.Context, call *ToolCall) (*ToolResult, error) {
		if call.Source != SourceInternal && g.rules.disabled(call.Role, call.Tool) {
			return nil, &CallError{Kind: ErrToolDisabled, Tool: call.Tool, Role: call.Role}
		}
		return next(ctx, call)
	}
}

// trajectoryMiddleware writes tool_call before and tool_call_result after
// every external call that reached a tool (fail-open: a trajectory problem
// never fails the call).
func (g *Gateway) trajectoryMiddleware(next CallHandler) CallHandler {
	return func(ctx context.Context, call *ToolCall) (*ToolResult, error) {
		if call.Source == SourceInternal {
			return next(ctx, call)
		}
		if _, ok := g.reg.lookup(call.Tool); !ok {
			return next(ctx, call)
		}
		source := ""
		if call.Source == SourceStep {
			source = protocol.TrajectorySourceStep
		}
		args := call.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		args = capValue(args, g.traj.maxField)
		callFields := make([]field, 0, 2)
		if source != "" {
			callFields = append(callFields, field{"source", jsonString(source)})
		}
		tc := make([]byte, 0, len(args)+len(call.Tool)+40)
		tc = append(tc, `{"function_name":`...)
		tc = appendJSONString(tc, call.Tool)
		tc = append(tc, `,"arguments":`...)
		tc = append(tc, compactOrRaw(args)...)
		tc = append(tc, '}')
		callFields = append(callFields, field{"tool_call", tc})
		callID := g.traj.emit(protocol.EventToolCall, callFields...)

		res, err := next(ctx, call)

		resFields := make([]field, 0, 4)
		if source != "" {
			resFields = append(resFields, field{"source", jsonString(source)})
		}
		resFields = append(resFields, field{"tool_call_event_id", jsonString(callID)})
		switch {
		case err != nil:
			var ce *CallError
			text := err.Error()
			if errors.As(err, &ce) {
				text = ce.mcpText()
			}
			resFields = append(resFields, field{"tool_call_result", capResult(errorResult(text), g.traj.maxField)})
		default:
			recorded := res.Raw
			if res.Recorded != nil {
				recorded = res.Recorded
			}
			resFields = append(resFields, field{"tool_call_result", compactOrRaw(capResult(recorded, g.traj.maxField))})
			if !res.Native {
				resFields = append(resFields, field{"changelog_id", int64JSON(res.ChangelogID)})
			}
		}
		g.traj.emit(protocol.EventToolCallResult, resFields...)
		return res, err
	}
}

// consistencyMiddleware brackets each call with changelog reads and, in
// consistent mode, holds the global lock across the call and the read that
// follows it. Native tools over /mcp and internal calls are never
// serialised.
func (g *Gateway) consistencyMiddleware(next CallHandler) CallHandler {
	return func(ctx context.Context, call *ToolCall) (*ToolResult, error) {
		entry, ok := g.reg.lookup(call.Tool)
		if !ok {
			return next(ctx, call)
		}
		lock := g.cfg.Mode == ModeConsistent && call.Source != SourceInternal &&
			(!entry.native() || call.Source == SourceStep)
		if lock {
			select {
			case g.consistent <- struct{}{}:
			case <-ctx.Done():
				return nil, &CallError{Kind: ErrChildCall, Tool: call.Tool, Detail: ctx.Err().Error(), ErrorKind: "CancelledError"}
			}
			defer func() { <-g.consistent }()
		}
		var before *int64
		if !entry.native() && !lock {
			before = g.changelog.Read(ctx)
		}
		res, err := next(ctx, call)
		if err == nil && !entry.native() {
			res.ChangelogBefore = before
			res.ChangelogID = g.changelog.Read(ctx)
		}
		return res, err
	}
}

// dispatch runs the call on the child or native tool that owns the name.
func (g *Gateway) dispatch(ctx context.Context, call *ToolCall) (*ToolResult, error) {
	entry, ok := g.reg.lookup(call.Tool)
	if !ok {
		return nil, &CallError{Kind: ErrUnknownTool, Tool: call.Tool}
	}
	if entry.native() {
		nr, err := entry.callNative(ctx, call)
		if err != nil {
			return nil, &CallError{Kind: ErrNativeToolFailure, Tool: call.Tool, Detail: err.Error(), ErrorKind: "RuntimeError"}
		}
		return &ToolResult{Raw: nr.Raw, Recorded: nr.Recorded, IsError: resultIsError(nr.Raw), Native: true}, nil
	}
	ch := g.children[entry.server]
	timeout := g.opts.CallTimeout
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	meta := metaFor(call)
	if call.Progress != nil && len(call.ProgressToken) > 0 {
		// The child gets a token of ours (agents' tokens may collide on
		// the shared child session); its progress is mapped back.
		tok := jsonString("gw-progress-" + strconv.FormatInt(g.progressSeq.Add(1), 10))
		cctx = context.WithValue(cctx, progressKey{}, &progressRelay{childToken: tok, agentToken: call.ProgressToken, send: call.Progress})
		meta = withProgressToken(meta, tok)
	}
	params := callParams(entry.childName, call.Arguments, meta)
	raw, err := ch.request(cctx, "tools/call", params[:]...)
	if err != nil {
		if ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return nil, &CallError{Kind: ErrToolTimeout, Tool: call.Tool, Timeout: timeout}
		}
		kind := "Exception"
		var re *rpcError
		var de *deliveryError
		switch {
		case errors.As(err, &re):
			kind = "McpError"
		case errors.As(err, &de):
			kind = "ConnectionError"
		case ctx.Err() != nil:
			kind = "CancelledError"
		}
		return nil, &CallError{Kind: ErrChildCall, Tool: call.Tool, Detail: err.Error(), ErrorKind: kind}
	}
	return &ToolResult{Raw: raw, IsError: resultIsError(raw)}, nil
}

func int64JSON(v *int64) json.RawMessage {
	if v == nil {
		return json.RawMessage("null")
	}
	return json.RawMessage(fmt.Sprint(*v))
}

func jsonString(s string) json.RawMessage {
	return appendJSONString(make([]byte, 0, len(s)+2), s)
}

// appendJSONString appends s as a JSON string, escaped as encoding/json
// does (HTML characters included), so hot paths can render into a buffer
// they already hold.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// compactOrRaw returns one-line JSON for embedding in a JSONL event: raw
// compacted when valid, else the raw bytes as a JSON string.
func compactOrRaw(raw json.RawMessage) json.RawMessage {
	// Raw values reach here from a JSON decoder (valid JSON); only literal
	// line breaks, which can only be whitespace, need compacting.
	if len(raw) > 0 && bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return raw
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err == nil {
		return b.Bytes()
	}
	return jsonString(string(raw))
}
