package triggers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/agentenv/agentenv/gateway/vclock"
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
	client, err := a2aclient.NewFromEndpoints(ctx,
		[]a2a.AgentInterface{{URL: cfg.A2AURL + "/a2a", Transport: a2a.TransportProtocolJSONRPC}},
		a2aclient.WithJSONRPCTransport(x.opts.HTTPClient),
		a2aclient.WithConfig(a2aclient.Config{Polling: true}))
	if err != nil {
		return fmt.Errorf("executor client: %w", err)
	}
	defer func() { _ = client.Destroy() }()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: instruction})
	msg.ContextID = contextID
	rctx, cancel := context.WithTimeout(ctx, x.opts.RequestTimeout)
	res, err := client.SendMessage(rctx, &a2a.MessageSendParams{Message: msg})
	cancel()
	if err != nil {
		return fmt.Errorf("message/send: %w", err)
	}
	var task *a2a.Task
	switch v := res.(type) {
	case *a2a.Message:
		return nil // a direct reply: the agent is done
	case *a2a.Task:
		task = v
	default:
		return fmt.Errorf("message/send: unexpected result %T", res)
	}
	for {
		if task.Status.State.Terminal() {
			if task.Status.State == a2a.TaskStateCompleted {
				return nil
			}
			return fmt.Errorf("%w: %s", ErrNotCompleted, task.Status.State)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), x.opts.RequestTimeout)
			_, _ = client.CancelTask(cctx, &a2a.TaskIDParams{ID: task.ID})
			cancel()
			return fmt.Errorf("%w after %s", ErrExecutorTimeout, timeout)
		case <-x.opts.Clock.After(x.opts.PollInterval):
		}
		rctx, cancel := context.WithTimeout(ctx, x.opts.RequestTimeout)
		t, err := client.GetTask(rctx, &a2a.TaskQueryParams{ID: task.ID})
		cancel()
		if err != nil {
			return fmt.Errorf("tasks/get: %w", err)
		}
		task = t
	}
}

var _ Executor = (*A2AExecutor)(nil)
