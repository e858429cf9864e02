package envsdk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"github.com/agentenv/agentenv/protocol"
)

// Transports of a ToolContext.
const (
	TransportMCP  = "mcp"
	TransportREST = "rest"
	TransportNone = "none"
)

// Caller is who made a call, resolved from the call (docs/protocol.md, "Identity").
type Caller struct {
	// Role is the normalised role; empty means no role.
	Role string
	// Session is the caller's session key; empty when unknown.
	Session string
	// RawRole is the role exactly as received (a non-string _meta role is
	// kept as its JSON text).
	RawRole string
}

// ToolContext describes the call being served. It is immutable; read it
// with ToolContextFrom. Outside a call it is the zero value with Transport
// TransportNone.
type ToolContext struct {
	Caller Caller
	// Tool is the tool name, or the extension method name for REST calls.
	Tool string
	// Arguments is a copy of the call's arguments.
	Arguments json.RawMessage
	// CallID is 32 lowercase hex characters, unique per call.
	CallID string
	// Transport is TransportMCP, TransportREST or TransportNone.
	Transport string
}

type toolContextKey struct{}

// ToolContextFrom returns the ToolContext bound to ctx, or the empty
// context (Transport "none") outside a call.
func ToolContextFrom(ctx context.Context) ToolContext {
	if tc, ok := ctx.Value(toolContextKey{}).(ToolContext); ok {
		return tc
	}
	return ToolContext{Transport: TransportNone}
}

// CallerFrom is ToolContextFrom(ctx).Caller.
func CallerFrom(ctx context.Context) Caller { return ToolContextFrom(ctx).Caller }

// WithToolContext binds tc to ctx.
func WithToolContext(ctx context.Context, tc ToolContext) context.Context {
	return context.WithValue(ctx, toolContextKey{}, tc)
}

// WithCaller binds a caller for direct handler tests: the role is
// normalised as on the wire and the raw value kept. Nesting shadows the
// outer caller; the outer context still holds its own.
func WithCaller(ctx context.Context, role, session string) context.Context {
	tc := ToolContextFrom(ctx)
	tc.Caller = Caller{Role: protocol.NormalizeRole(role), RawRole: role, Session: session}
	return WithToolContext(ctx, tc)
}

// resolveCaller resolves the caller of one call: a _meta role key, present
// with any value, makes the call "forwarded" and headers are ignored.
func resolveCaller(meta map[string]any, header http.Header, mcpSession string) Caller {
	metaSession := ""
	if s, ok := meta[protocol.MetaSession].(string); ok {
		metaSession = s
	}
	if raw, forwarded := meta[protocol.MetaRole]; forwarded {
		c := Caller{Session: metaSession}
		switch v := raw.(type) {
		case string:
			c.RawRole = v
			c.Role = protocol.NormalizeRole(v)
		case nil:
		default:
			b, _ := json.Marshal(v)
			c.RawRole = string(b) // non-string roles mean no role
		}
		return c
	}
	raw := header.Get(protocol.HeaderRole)
	c := Caller{RawRole: raw, Role: protocol.NormalizeRole(raw), Session: metaSession}
	if c.Session == "" {
		c.Session = mcpSession
	}
	return c
}

func newCallID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
