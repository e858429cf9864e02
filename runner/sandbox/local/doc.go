// Package local is the sandbox provider that needs nothing installed: a
// sandbox is a work folder <root>/agent-env-<sandbox_id>-<random>/ on the
// host, and commands run as local processes with /app mapped to the folder.
//
// It is not an isolation boundary; it exists so that a task can run on a
// fresh machine (`agent-env run hello`) and so that the runner's tests need
// no Docker. Container mode needs a Docker engine and returns
// sandbox.ErrNotSupported here; a later provider adds it.
//
//	p := local.New(local.DefaultRoot(), nil)
//	sb, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeVM})
//	res, err := sb.Exec(ctx, []string{"bash", "-c", "ls /app"}, nil)
//	defer sb.Terminate(ctx)
package local
