package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// Error is a failed exchange with a plugin; its text always names the
// plugin. Err is a *RemoteError when the plugin answered with an error, a
// *GarbageError when it wrote something that is not JSON-RPC, or wraps
// context.DeadlineExceeded when it did not answer in time.
type Error struct {
	Plugin string
	Method string // "" when the failure is not about one call
	Err    error
}

func (e *Error) Error() string {
	if e.Method == "" {
		return fmt.Sprintf("plugin %s: %v", e.Plugin, e.Err)
	}
	return fmt.Sprintf("plugin %s: %s: %v", e.Plugin, e.Method, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Kind names the failure for a failed step's error_type.
func (e *Error) Kind() string {
	switch {
	case errors.Is(e.Err, context.DeadlineExceeded):
		return "Timeout"
	case errors.Is(e.Err, context.Canceled):
		return "Cancelled"
	}
	return "PluginError"
}

// RemoteError is a JSON-RPC error a plugin answered with.
type RemoteError struct {
	Code    int64
	Message string
}

func (e *RemoteError) Error() string { return e.Message }

// compileSchema reads a step type's JSON Schema.
func compileSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	return s.Resolve(nil)
}
