// Package runner executes tasks: JSON arrays of steps run as a DAG against
// one mutable run context, with a task instance recorded after every step.
//
// Why a DAG over a shared context: steps deploy things (sandboxes, envs,
// agents) and later steps find them by name in the context, never by a
// return value, so a task is plain data that can be stored, versioned,
// resumed from a saved context and re-run.
//
// Main types:
//
//   - StepRegistry maps step types to StepInfo; runner/steps.Builtin()
//     returns the built-in set. A step type is a config struct implementing
//     Step (and optionally Validator, Preflighter, EntityRefser).
//   - Task / StepDef are a parsed, validated task (ParseSteps, ValidateDAG);
//     a refused task is a *TaskError listing every problem, each a
//     *StepError naming the step and the field.
//   - Runner.Run schedules the DAG: ready steps run concurrently, tolerated
//     failures release their dependents, fatal ones stop new launches,
//     retries roll the context back and re-dispatch the failed span.
//   - RunContext is the context document plus the live sandboxes; Diff/Ops
//     are the per-step changes written to the task instance and journal.
//   - Verification, Row and Aggregator are the verifier contract.
//   - Services gives steps the stores and the sandbox providers
//     (SandboxProvider = runner/sandbox.Provider).
//
// Usage:
//
//	r := runner.New(&runner.Options{Steps: steps.Builtin()})
//	task, err := r.ParseTask("demo", 1, taskJSON)
//	rc := runner.NewRunContext(nil, &runner.Services{Documents: docs, Objects: objs,
//		Sandboxes: map[string]runner.SandboxProvider{"local": local.New(local.DefaultRoot(), nil)}})
//	res, err := r.Run(ctx, task, rc, &runner.RunOptions{Documents: docs})
//	defer r.TeardownRun(ctx, rc, 0)
package runner
