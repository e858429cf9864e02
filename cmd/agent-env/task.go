package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
)

func newTaskCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "task", Short: "Create, inspect and run tasks"}
	cmd.AddCommand(newTaskCreateCmd(d), newTaskGetCmd(d), newTaskListCmd(d), newTaskValidateCmd(d),
		newTaskGetInstanceCmd(d), newTaskRunCmd(d), newTaskRunBatchCmd(d),
		newTaskStatusCmd(d), newTaskCancelCmd(d)) // remote.go: runs on Temporal
	return cmd
}

func newTaskCreateCmd(d *deps) *cobra.Command {
	var id string
	var skip bool
	var out *outputFlag
	cmd := &cobra.Command{
		Use:     "create FILE",
		Aliases: []string{"put"},
		Short:   "Store a task from a JSON array of steps",
		Long: "Store a task: FILE is a JSON array of step objects, each with an id, a type and that\n" +
			"type's fields (depends_on names earlier steps). The steps are checked first (unknown\n" +
			"types, duplicate ids, bad depends_on, missing fields) and preflight checks that the\n" +
			"referenced artifacts exist; nothing is saved when either finds a problem.",
		Example: "  cat > steps.json <<'JSON'\n" +
			"  [{\"id\":\"box\",\"type\":\"deploy_sandbox\",\"sandbox_name\":\"box\",\"sandbox_mode\":\"vm\"},\n" +
			"   {\"id\":\"check\",\"type\":\"verify_sandbox\",\"sandbox_name\":\"box\",\"verifier_id\":\"ok\",\n" +
			"    \"criteria\":[{\"type\":\"bash_cmd_succeeds\",\"bash_cmd\":\"true\"}]}]\n" +
			"  JSON\n" +
			"  agent-env task create steps.json --id my-task\n" +
			"  agent-env task run my-task",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if out.structured() {
				return taskCreateJSON(ctx, d, id, args[0], skip)
			}
			fmt.Fprintf(d.stdout, "Reading steps from %s...\n", args[0])
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			return d.withStores(ctx, func(ctx context.Context, st *storeSet) error {
				r := runner.New(&runner.Options{Steps: d.steps(), Logger: d.logger()})
				docs := st.docsFor(id)
				var n int
				t, err := r.CreateTask(ctx, docs, d.services(ctx, st, id), id, data, &runner.CreateTaskOptions{
					SkipValidation: skip,
					OnStep: func(i, total int, sd *runner.StepDef, v int) {
						if i == 0 {
							n = total
						}
						fmt.Fprintf(d.stdout, "  Step %d/%d: %s id=%s version=%d\n", i+1, total, sd.Type, sd.ID, v)
						if i == total-1 {
							fmt.Fprintf(d.stdout, "Creating task '%s' with %d steps...\n", id, n)
						}
					},
				})
				var pe *runner.PreflightError
				if errors.As(err, &pe) {
					printPreflight(d, pe.Problems)
					fmt.Fprintln(d.stdout, "Nothing was saved. Re-run with --skip-validation to save anyway.")
					return errSilent
				}
				if err != nil {
					return taskProblems(d, err)
				}
				fmt.Fprintf(d.stdout, "Created task: id=%s version=%d steps=%d\n", t.ID, t.Version, len(t.Steps))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "task id (required)")
	cmd.Flags().BoolVar(&skip, "skip-validation", false, "save even when preflight finds problems")
	out = addOutputFlag(cmd, formatTable)
	_ = cmd.MarkFlagRequired("id")
	return cmd
}

func newTaskGetCmd(d *deps) *cobra.Command { return newDocGetCmd(d, registry.Tasks, "task") }

func newTaskListCmd(d *deps) *cobra.Command {
	return newDocListCmd(d, registry.Tasks, "task", "steps", "STEPS")
}

func newTaskValidateCmd(d *deps) *cobra.Command {
	var id string
	var version int
	cmd := &cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check a stored task, or a task file, without running it (DAG rules and preflight)",
		Long: "Check a task: the stored task --id, or FILE (a JSON array of steps, nothing is stored).\n" +
			"Every problem is listed, one per line; the exit status is non-zero when there is one.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && id == "" {
				return errors.New("give a task FILE or --id")
			}
			if len(args) == 1 && id != "" {
				return errors.New("give a task FILE or --id, not both")
			}
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				r := runner.New(&runner.Options{Steps: d.steps(), Logger: d.logger()})
				var t *runner.Task
				var err error
				if len(args) == 1 {
					data, rerr := os.ReadFile(args[0])
					if rerr != nil {
						return rerr
					}
					t, err = r.ParseTask(args[0], 0, data)
				} else {
					t, err = r.LoadTask(ctx, st.docsFor(id), registry.Ref{ID: id, Version: version})
				}
				if err != nil {
					return taskProblems(d, err)
				}
				probs := runner.Preflight(ctx, t, d.services(ctx, st, id))
				if len(probs) == 0 {
					if len(args) == 1 {
						fmt.Fprintf(d.stdout, "Task file %s: no problems.\n", args[0])
					} else {
						fmt.Fprintf(d.stdout, "Task %s version=%d: no problems.\n", t.ID, t.Version)
					}
					return nil
				}
				printPreflight(d, probs)
				return errSilent
			})
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "stored task id (or give FILE)")
	cmd.Flags().IntVar(&version, "version", 0, "version (default latest)")
	return cmd
}

func printPreflight(d *deps, probs []error) {
	fmt.Fprintf(d.stdout, "Preflight found %d problem(s):\n", len(probs))
	for _, p := range probs {
		fmt.Fprintf(d.stdout, "  - %v\n", p)
	}
}

// taskProblems prints a *runner.TaskError one problem per line (the
// usual "Error:" line folds a message onto one line); other errors pass
// through.
func taskProblems(d *deps, err error) error {
	var te *runner.TaskError
	if !errors.As(err, &te) {
		return err
	}
	prefix := strings.TrimSuffix(err.Error(), te.Error())
	fmt.Fprintf(d.stderr, "Error: %s%s\n", prefix, te.Error())
	return errSilent
}

func newTaskGetInstanceCmd(d *deps) *cobra.Command {
	var id string
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "get-instance",
		Short: "Print a task instance (a run record)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				inst, err := runner.GetInstance(ctx, st.docsFor(id), id)
				if err != nil {
					return err
				}
				if out.structured() {
					return printJSON(d, inst)
				}
				completed := "-"
				if inst.CompletedAtUTC != nil {
					completed = *inst.CompletedAtUTC
				}
				w := d.stdout
				fmt.Fprintf(w, "Instance ID: %s\n", inst.InstanceID)
				fmt.Fprintf(w, "Task ID: %s\n", inst.TaskID)
				fmt.Fprintf(w, "Task Version: %d\n", inst.TaskVersion)
				fmt.Fprintf(w, "Status: %s\n", inst.Status)
				if inst.Error != nil {
					fmt.Fprintf(w, "Error: %s\n", *inst.Error)
				}
				fmt.Fprintf(w, "Progress %d/%d\n", len(inst.CompletedSteps), inst.TotalSteps)
				fmt.Fprintf(w, "Created At (UTC): %s\n", inst.CreatedAtUTC)
				fmt.Fprintf(w, "Completed At (UTC): %s\n", completed)
				fmt.Fprintln(w, "Context:")
				return printJSON(d, inst.Context)
			})
		},
	}
	idArg(cmd, &id, idSpec{noun: "task instance", flags: []string{"id", "instance-id"}, complete: d.completeRecords(registry.TaskInstances)})
	out = addOutputFlag(cmd, formatTable)
	return cmd
}
