package temporal

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// WorkerOptions configures NewWorker; nil means defaults.
type WorkerOptions struct {
	WorkflowsOptions
	// MaxConcurrentSteps bounds the steps this worker runs at once; 0
	// means 16.
	MaxConcurrentSteps int
	// StopTimeout is how long a stopping worker lets running steps finish
	// before it cancels them and hands them back; 0 means 30 s.
	StopTimeout time.Duration
}

// Register registers the workflow and activities on any worker.Registry
// (a worker, or a testsuite environment).
func (w *Workflows) Register(reg worker.Registry) {
	reg.RegisterWorkflowWithOptions(w.RunTask, workflow.RegisterOptions{Name: WorkflowName})
	reg.RegisterActivityWithOptions(w.RunStep, activity.RegisterOptions{Name: ActivityRunStep})
	reg.RegisterActivityWithOptions(w.Terminate, activity.RegisterOptions{Name: ActivityTerminate})
	reg.RegisterActivityWithOptions(w.Sweep, activity.RegisterOptions{Name: ActivitySweep})
}

// Worker is a Temporal worker serving runs on one task queue.
type Worker struct {
	w  worker.Worker
	wf *Workflows
}

// NewWorker returns a worker for c's task queue running wf's workflow and
// activities.
func NewWorker(c *Client, wf *Workflows, o *WorkerOptions) *Worker {
	var opts WorkerOptions
	if o != nil {
		opts = *o
	}
	if opts.MaxConcurrentSteps <= 0 {
		opts.MaxConcurrentSteps = 16
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 30 * time.Second
	}
	w := worker.New(c.c, c.queue, worker.Options{
		MaxConcurrentActivityExecutionSize: opts.MaxConcurrentSteps,
		WorkerStopTimeout:                  opts.StopTimeout,
		// The workflow code parses the task and schedules: quick, but a
		// loaded machine must not make the SDK call it a deadlock.
		DeadlockDetectionTimeout: 10 * time.Second,
	})
	wf.Register(w)
	return &Worker{w: w, wf: wf}
}

// Run serves until ctx is done, then stops gracefully: running steps get
// the stop timeout to finish, after which they are cancelled and handed
// back to the server (retried on another worker).
func (w *Worker) Run(ctx context.Context) error {
	if err := w.w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	w.w.Stop()
	return nil
}
