// Package temporal runs tasks on Temporal workers: each task run is a
// workflow and each step an activity, so a run survives the loss of the
// process that submitted it or of a worker that ran one of its steps.
//
// Why the scheduling stays in runner: the workflow drives the same DAG
// scheduler as the local runner (runner.Runner.RunDAG) through a
// workflow-side runner.Executor. Readiness, tolerated and fatal failures,
// retry_config spans with their context rollback, and cancellation are
// therefore the local runner's, not a re-implementation; only where a step
// runs differs. An activity receives the context document as it stood when
// the step was launched, runs the step on the worker against a context
// rebuilt from it, and returns the step's changes as runner.Ops, which the
// workflow applies (concurrent steps merge as the local runner's diffs do).
//
// Sandboxes: every sandbox a step creates is reported in the activity's
// heartbeat as soon as it exists and returned with the step's changes; the
// workflow records the handles in metadata.sandbox_handles. A step retried
// on another worker (its worker died or stopped) first tears down what the
// lost attempt created; retry rollback, cancellation and the end of the
// run tear down through an activity, reconnecting by handle where the
// sandbox is not live on that worker. Heartbeats go out in batches, so a
// worker killed just after a create may not have reported it: every
// sandbox carries the labels LabelRun and LabelStep, and a retried step
// (and the end of a run one of whose steps was lost) also sweeps its
// labels on the providers that can find sandboxes by label
// (sandbox.Sweeper).
//
// Main types:
//
//   - Workflows holds the workflow and activities; NewWorker registers them
//     on a task queue with per-provider concurrency limits.
//   - Client submits runs (Submit), follows them (Wait, Progress), and
//     cancels them (Cancel); Dial fails at once when the server does not
//     answer.
//   - RunInput / RunOutput are the workflow's data; StepInput / StepOutput
//     the activity's.
//
// Usage:
//
//	c, err := temporal.Dial(ctx, &temporal.ClientOptions{Address: "127.0.0.1:7233", TaskQueue: "agentenv"})
//	w := temporal.NewWorker(c, r, &temporal.WorkerOptions{Services: svc})
//	go w.Run(ctx)
//	ref, err := c.Submit(ctx, in)
//	out, err := c.Wait(ctx, ref.WorkflowID, nil)
package temporal
