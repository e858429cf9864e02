package gateway

import (
	"context"
	"encoding/json"
)

// ToolSource is a built-in source of gateway-native tools, such as the
// browser's computer-use tools (package gateway/browser). Its tools are
// registered at New next to list_website_urls and get_time, so they pass
// through the same call chain as a child's tools: role rules, the
// trajectory, triggers. Close is called by Gateway.Close.
type ToolSource interface {
	// Name names the source in logs.
	Name() string
	// Tools are the source's tools, registered in order.
	Tools() []NativeTool
	// Close releases what the source holds (a DevTools connection).
	Close() error
}

// NativeResult is what NativeTool.CallRecorded returns: the result the
// caller gets, and what the trajectory records in its place.
type NativeResult struct {
	// Raw is the CallToolResult JSON returned to the caller.
	Raw json.RawMessage
	// Recorded, when non-nil, is the CallToolResult JSON the trajectory
	// records instead of Raw: a screenshot's object-store link rather than
	// its bytes.
	Recorded json.RawMessage
}

// registerSources adds every tool of the configured sources.
func (g *Gateway) registerSources() error {
	for _, s := range g.opts.ToolSources {
		for _, t := range s.Tools() {
			var d descriptorFields
			if err := json.Unmarshal(t.Descriptor, &d); err != nil || d.Name == "" {
				return &ConfigError{Var: "tool source " + s.Name(), Reason: "a tool descriptor has no valid name"}
			}
			if _, err := g.reg.setNative(d.Name, &t); err != nil {
				return &ConfigError{Var: "tool source " + s.Name(), Reason: err.Error()}
			}
		}
	}
	return nil
}

// callNative runs a native tool's handler.
func (e *toolEntry) callNative(ctx context.Context, call *ToolCall) (NativeResult, error) {
	if e.recorded != nil {
		return e.recorded(ctx, call)
	}
	raw, err := e.handler(ctx, call)
	return NativeResult{Raw: raw}, err
}
