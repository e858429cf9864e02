package envsdk

import (
	"context"
	"sync"
)

// Setting is a piece of an env's behaviour that the harness configures
// before an agent runs (who the acting user is, which tool should fail
// and how often): a REST extension the runner's apply_server_config step
// calls through the gateway, and a value the env's tools read. The agent
// never sees it: extensions are not MCP tools.
//
// Each call replaces the whole value with the call's body (T's field
// defaults fill what the body leaves out) and answers the value now in
// force, which the step records in metadata.server_config_changes.
type Setting[T any] struct {
	mu      sync.RWMutex
	initial T
	v       T
	check   func(ctx context.Context, v T) error
}

// SettingOptions tunes AddSetting; nil means defaults.
type SettingOptions[T any] struct {
	// Check, when set, vets a value before it takes effect; its error
	// answers 500 extension_failed and the value is not changed.
	Check func(ctx context.Context, v T) error
}

// AddSetting declares e as a configurable extension over T (a struct whose
// fields are the extension's arguments, described and defaulted by tags
// as for AddExtension) and returns the setting, holding initial until the
// first call. Registration errors are reported like AddExtension's.
func AddSetting[T any](s *Server, e *Extension, initial T, opts *SettingOptions[T]) *Setting[T] {
	c := &Setting[T]{initial: initial, v: initial}
	if opts != nil {
		c.check = opts.Check
	}
	AddExtension(s, e, func(ctx context.Context, _ *Request, in T) (T, error) {
		if c.check != nil {
			if err := c.check(ctx, in); err != nil {
				var zero T
				return zero, err
			}
		}
		c.mu.Lock()
		c.v = in
		c.mu.Unlock()
		return in, nil
	})
	return c
}

// Get returns the value in force.
func (c *Setting[T]) Get() T {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.v
}

// Reset restores the initial value; call it from the data/reset handler
// when a reset should also undo the configuration.
func (c *Setting[T]) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.v = c.initial
}
