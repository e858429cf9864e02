package triggers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentenv/agentenv/gateway/vclock"
	"github.com/agentenv/agentenv/protocol"
)

// Executor runs nl actions (§9.3). Execute returns nil only when the
// instruction's task completed; the reply text is unused.
type Executor interface {
	Execute(ctx context.Context, cfg ExecutorConfig, contextID, instruction string) error
}

// ExecutorConfig is the registered executor.
type ExecutorConfig struct {
	// A2AURL is the agent's base URL without a trailing slash; the JSON-RPC
	// endpoint is A2AURL + "/a2a".
	A2AURL string
	// Role is the executor's AgentEnv-Role (its own calls are ignored).
	Role string
	// Timeout bounds the whole attempt.
	Timeout time.Duration
}

// ErrNotCompleted is returned when the executor's task ended in a state
// other than completed; the error text names the state.
var ErrNotCompleted = errors.New("executor task did not complete")

// ErrExecutorTimeout is returned when the task is still running at the
// executor timeout (the task is then cancelled with tasks/cancel).
var ErrExecutorTimeout = errors.New("executor timed out")

// A2AExecutorOptions configures an A2AExecutor. Nil means defaults.
type A2AExecutorOptions struct {
	// HTTPClient carries the JSON-RPC requests; nil means a client without
	// a global timeout (each request is bounded by RequestTimeout).
	HTTPClient *http.Client
	// PollInterval is the tasks/get period; 0 means 2 s.
	PollInterval time.Duration
	// RequestTimeout bounds each HTTP request; 0 means 30 s.
	RequestTimeout time.Duration
	// Clock paces polling; nil means vclock.System.
	Clock vclock.Clock
}

// A2AExecutor sends the instruction with A2A message/send (non-blocking,
// contextId "trigger-<id>") and polls tasks/get until a terminal state or
// the timeout, sending tasks/cancel on timeout.
type A2AExecutor struct {
	opts A2AExecutorOptions
}

// NewA2AExecutor returns an executor client.
func NewA2AExecutor(opts *A2AExecutorOptions) *A2AExecutor {
	x := &A2AExecutor{}
	if opts != nil {
		x.opts = *opts
	}
	if x.opts.HTTPClient == nil {
		x.opts.HTTPClient = &http.Client{}
	}
	if x.opts.PollInterval <= 0 {
		x.opts.PollInterval = 2 * time.Second
	}
	if x.opts.RequestTimeout <= 0 {
		x.opts.RequestTimeout = 30 * time.Second
	}
	if x.opts.Clock == nil {
		x.opts.Clock = vclock.System{}
	}
	return x
}

// Execute implements Executor.
func (x *A2AExecutor) Execute(ctx context.Context, cfg ExecutorConfig, contextID, instruction string) error {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultExecutorTimeout
	}
	deadline := x.opts.Clock.After(timeout)
	endpoint := cfg.A2AURL + "/a2a"
	msg := a2aMessage{Kind: "message", Role: "user", MessageID: newMessageID(), ContextID: contextID,
		Parts: []protocol.Part{protocol.TextPart(instruction)}}
	var res a2aResult
	err := x.call(ctx, endpoint, "message/send", a2aSendParams{Message: msg, Configuration: a2aSendConfig{Blocking: false}}, &res)
	if err != nil {
		return fmt.Errorf("message/send: %w", err)
	}
	switch res.Kind {
	case "message":
		return nil // a direct reply: the agent is done
	case "task":
	default:
		return fmt.Errorf("message/send: unexpected result kind %q", res.Kind)
	}
	task := res
	for {
		if terminalTaskState(task.Status.State) {
			if task.Status.State == "completed" {
				return nil
			}
			return fmt.Errorf("%w: %s", ErrNotCompleted, task.Status.State)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			_ = x.call(context.WithoutCancel(ctx), endpoint, "tasks/cancel", a2aTaskID{ID: task.ID}, &a2aResult{})
			return fmt.Errorf("%w after %s", ErrExecutorTimeout, timeout)
		case <-x.opts.Clock.After(x.opts.PollInterval):
		}
		var next a2aResult
		if err := x.call(ctx, endpoint, "tasks/get", a2aTaskID{ID: task.ID}, &next); err != nil {
			return fmt.Errorf("tasks/get: %w", err)
		}
		task = next
	}
}

var _ Executor = (*A2AExecutor)(nil)
