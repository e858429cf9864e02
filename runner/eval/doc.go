// Package eval is the eval: a versioned, named list of tasks that is run
// as a unit, each task k times, and scored per task with pass@k
// (collection "evals").
//
// An eval comes from a file given to `agent-env eval create` (a JSON list
// of {"task_id", "version"?}) or from a bundle's evals/<name>.toml
// (tasks = ["t", {task = "x", version = 3}]). Both are checked before
// anything is stored: each task listed once, each task known.
//
//	refs, err := eval.ParseJSON("eval.json", data)
//	e, err := eval.Create(ctx, docs, "my-eval", "eval.json", refs, nil)
//	rep, err := eval.Run(ctx, r, jobs, &eval.RunOptions{K: 5, MaxConcurrency: 4})
//	rep.Stats[0].PassAtK // the unbiased pass@k estimate
package eval
