package temporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// ClientOptions configures Dial.
type ClientOptions struct {
	// Address is the frontend's host:port; "" means 127.0.0.1:7233.
	Address string
	// Namespace; "" means "default".
	Namespace string
	// TaskQueue is where runs are submitted and workers poll; "" means
	// "agentenv".
	TaskQueue string
	// DialTimeout bounds the first contact; 0 means 10 s.
	DialTimeout time.Duration
	// Logger receives the SDK's logs; nil discards them.
	Logger *slog.Logger
}

// ErrUnreachable is matched when the Temporal server does not answer.
var ErrUnreachable = errors.New("temporal server unreachable")

// Client submits, follows and cancels runs.
type Client struct {
	c     client.Client
	queue string
	addr  string
}

// Dial connects to the server and checks it answers, so a wrong address
// fails here, at submit, rather than when the run is awaited.
func Dial(ctx context.Context, o *ClientOptions) (*Client, error) {
	var opts ClientOptions
	if o != nil {
		opts = *o
	}
	if opts.Address == "" {
		opts.Address = "127.0.0.1:7233"
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if opts.TaskQueue == "" {
		opts.TaskQueue = "agentenv"
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	l := opts.Logger
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	dctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	c, err := client.DialContext(dctx, client.Options{HostPort: opts.Address, Namespace: opts.Namespace,
		Logger: sdklog.NewStructuredLogger(l)})
	if err != nil {
		return nil, fmt.Errorf("%w at %s (namespace %q; [runner.temporal] address): %v", ErrUnreachable, opts.Address, opts.Namespace, err)
	}
	return &Client{c: c, queue: opts.TaskQueue, addr: opts.Address}, nil
}

// Close releases the connection.
func (c *Client) Close() { c.c.Close() }

// TaskQueue is the queue runs go to.
func (c *Client) TaskQueue() string { return c.queue }

// RunRef names a submitted run.
type RunRef struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
}

// Submit starts a run; its workflow id is the instance id.
func (c *Client) Submit(ctx context.Context, in RunInput) (RunRef, error) {
	run, err := c.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: in.InstanceID, TaskQueue: c.queue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE}, WorkflowName, in)
	if err != nil {
		return RunRef{}, fmt.Errorf("submit run %s to %s: %w", in.InstanceID, c.addr, err)
	}
	return RunRef{WorkflowID: run.GetID(), RunID: run.GetRunID()}, nil
}

// ErrNoRun is matched when no run has the given id.
var ErrNoRun = errors.New("no such run")

// Wait blocks until the run ends and returns its output; onProgress, when
// set, is called about once a second with the run's progress.
func (c *Client) Wait(ctx context.Context, id string, onProgress func(*Progress)) (*RunOutput, error) {
	run := c.c.GetWorkflow(ctx, id, "")
	done := make(chan error, 1)
	var out RunOutput
	go func() { done <- run.Get(ctx, &out) }()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return nil, c.notFound(id, err)
			}
			return &out, nil
		case <-t.C:
			if onProgress != nil {
				if p, err := c.Progress(ctx, id); err == nil {
					onProgress(p)
				}
			}
		}
	}
}

// Progress queries a running run.
func (c *Client) Progress(ctx context.Context, id string) (*Progress, error) {
	v, err := c.c.QueryWorkflow(ctx, id, "", QueryProgress)
	if err != nil {
		return nil, c.notFound(id, err)
	}
	var p Progress
	if err := v.Get(&p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Status is a run's state as the server knows it.
type Status struct {
	ID       string     `json:"id"`
	Status   string     `json:"status"` // running, completed, failed, cancelled, terminated, timed_out
	Progress *Progress  `json:"progress,omitempty"`
	Output   *RunOutput `json:"output,omitempty"`
}

// Status describes a run: its progress while it runs, its output once done.
func (c *Client) Status(ctx context.Context, id string) (*Status, error) {
	d, err := c.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, c.notFound(id, err)
	}
	st := &Status{ID: id}
	switch d.GetWorkflowExecutionInfo().GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		st.Status = "running"
		st.Progress, _ = c.Progress(ctx, id)
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		var out RunOutput
		if err := c.c.GetWorkflow(ctx, id, "").Get(ctx, &out); err != nil {
			return nil, err
		}
		st.Status, st.Output = out.Status, &out
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		st.Status = "cancelled"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		st.Status = "terminated"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		st.Status = "timed_out"
	default:
		st.Status = "failed"
	}
	return st, nil
}

// Cancel asks a run to stop: running steps are cancelled, then its
// sandboxes are torn down.
func (c *Client) Cancel(ctx context.Context, id string) error {
	if err := c.c.CancelWorkflow(ctx, id, ""); err != nil {
		return c.notFound(id, err)
	}
	return nil
}

func (c *Client) notFound(id string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("%w: %q", ErrNoRun, id)
	}
	return err
}
