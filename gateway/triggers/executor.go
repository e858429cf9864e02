package triggers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentenv/agentenv/gateway/vclock"
	"github.com/agentenv/agentenv/internal/a2aclient"
)

// Executor runs nl actions. Execute returns nil only when the
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
	client := a2aclient.New(cfg.A2AURL, x.opts.HTTPClient)
	// message/send is called once, not through Send's retries: an
	// executor that does not answer fails the fire, which verify and the
	// nl retry then handle.
	msg := a2aclient.Message{Kind: "message", Role: "user", MessageID: a2aclient.NewID(), ContextID: contextID,
		Parts: []a2aclient.Part{{Kind: "text", Text: instruction}}}
	params := map[string]any{"message": msg, "configuration": map[string]any{"blocking": false}}
	var task a2aclient.Task
	if err := x.call(ctx, func(ctx context.Context) error { return client.Call(ctx, "message/send", params, &task) }); err != nil {
		return fmt.Errorf("message/send: %w", err)
	}
	if task.Kind == "message" {
		return nil // a direct reply: the agent is done
	}
	for {
		if a2aclient.Terminal(task.Status.State) {
			if task.Status.State == "completed" {
				return nil
			}
			return fmt.Errorf("%w: %s", ErrNotCompleted, task.Status.State)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			_ = x.call(context.WithoutCancel(ctx), func(ctx context.Context) error { return client.Cancel(ctx, task.ID) })
			return fmt.Errorf("%w after %s", ErrExecutorTimeout, timeout)
		case <-x.opts.Clock.After(x.opts.PollInterval):
		}
		var next *a2aclient.Task
		if err := x.call(ctx, func(ctx context.Context) (err error) { next, err = client.Get(ctx, task.ID); return err }); err != nil {
			return fmt.Errorf("tasks/get: %w", err)
		}
		task = *next
	}
}

// call runs one request bounded by RequestTimeout.
func (x *A2AExecutor) call(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, x.opts.RequestTimeout)
	defer cancel()
	return f(ctx)
}

var _ Executor = (*A2AExecutor)(nil)
