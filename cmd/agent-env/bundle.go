package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundle"
)

func newBundleCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Make bundle folders (run them with agent-env run FOLDER)",
		Long: "A bundle is a folder with tasks/<name>.json and artifacts/<name>/ subfolders.\n" +
			"agent-env run FOLDER stores its contents under @local/... ids (an unchanged\n" +
			"file keeps its version) and runs its tasks.",
	}
	cmd.AddCommand(newBundleInitCmd(d))
	return cmd
}

type bundleInitRequest struct {
	fromTask string
	name     string
	out      *outputFlag
}

func newBundleInitCmd(d *deps) *cobra.Command {
	var req bundleInitRequest
	cmd := &cobra.Command{
		Use:   "init FOLDER --from-task ID[:VERSION]",
		Short: "Write a stored task as an editable bundle folder",
		Long: "Write a stored task as tasks/<name>.json in a new bundle folder, with every\n" +
			"artifact, env and agent reference pinned to the version that is latest now.\n" +
			"Edit the file, then run the folder with agent-env run FOLDER.",
		Example: "  agent-env bundle init ./my-hello --from-task @local/agentenv-framework/hello/hello\n" +
			"  agent-env run ./my-hello",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return bundleInit(cmd, d, args[0], req)
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.fromTask, "from-task", "", "the stored task to export: id or id:version (required)")
	f.StringVar(&req.name, "name", "", "task file name (default: the last segment of the task id)")
	req.out = addOutputFlag(cmd, formatTable)
	_ = cmd.MarkFlagRequired("from-task")
	return cmd
}

func bundleInit(cmd *cobra.Command, d *deps, dir string, req bundleInitRequest) error {
	ctx := cmd.Context()
	ref, err := registry.ParseRef(req.fromTask)
	if err != nil {
		return fmt.Errorf("--from-task: %w", err)
	}
	st, err := d.openStores(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	r := runner.New(&runner.Options{Steps: d.steps(), Logger: d.logger()})
	t, err := r.LoadTask(ctx, st.docsFor(ref.ID), ref)
	if err != nil {
		return err
	}
	res, err := bundle.Init(ctx, t, st.docsFor, dir, &bundle.InitOptions{Name: req.name})
	if err != nil {
		var se *runner.StepError
		if errors.As(err, &se) {
			return fmt.Errorf("task %s version=%d: %w", t.ID, t.Version, err)
		}
		return err
	}
	if req.out.structured() {
		pins := make([]map[string]any, 0, len(res.Pins))
		for _, p := range res.Pins {
			pins = append(pins, map[string]any{"step_id": p.StepID, "field": p.Field, "id": p.EntityID, "version": p.Version, "collection": p.Collection})
		}
		unpinned := make([]map[string]any, 0, len(res.Unpinned))
		for _, u := range res.Unpinned {
			unpinned = append(unpinned, map[string]any{"step_id": u.StepID, "field": u.Field, "id": u.EntityID})
		}
		return printJSON(d, map[string]any{"dir": res.Dir, "task_file": res.TaskFile, "readme": res.Readme,
			"task_id": t.ID, "task_version": t.Version, "steps": len(t.Steps), "pinned": pins, "unpinned": unpinned})
	}
	fmt.Fprintf(d.stdout, "Found task: id=%s version=%d steps=%d\n", t.ID, t.Version, len(t.Steps))
	for _, p := range res.Pins {
		fmt.Fprintf(d.stdout, "  Pinned step %s %s: %s version=%d\n", p.StepID, p.Field, p.EntityID, p.Version)
	}
	for _, u := range res.Unpinned {
		fmt.Fprintf(d.stdout, "  Not pinned (no version field) step %s %s: %s (latest at run time)\n", u.StepID, u.Field, u.EntityID)
	}
	fmt.Fprintf(d.stdout, "Wrote %s\nWrote %s\n", res.TaskFile, res.Readme)
	fmt.Fprintf(d.stdout, "Run it with: agent-env run %s\n", res.Dir)
	return nil
}
