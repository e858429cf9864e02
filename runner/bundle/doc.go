// Package bundle runs folders of tasks and artifacts at once: `agent-env run
// hello`.
//
// A bundle is a folder with kind subfolders (artifacts/, tasks/, and later
// envs/, agents/, skills/, evals/). Load parses one from any fs.FS;
// Materialise writes its entities to the stores under @local/... ids
// through the bundle ledger, so an unchanged bundle writes nothing the
// second time; Run executes the selected tasks concurrently and prints the
// progress and summary lines.
//
//	b, err := bundle.Locate("hello", bundles.FS())
//	m, err := bundle.Materialise(ctx, b, st, reg, out)
//	rep, err := bundle.Run(ctx, r, svc, m, &bundle.RunOptions{Out: out})
package bundle
