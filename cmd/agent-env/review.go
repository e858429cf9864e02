package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/steps/review"
)

// newReviewCmd is `agent-env review list | continue | abort`: the operator
// side of the review step. Decisions are records in the document store,
// so they reach a run going on in another process.
func newReviewCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "review", Short: "List the runs paused at a review step, and continue or abort them"}
	cmd.AddCommand(newReviewListCmd(d), newReviewDecideCmd(d, review.StateContinue), newReviewDecideCmd(d, review.StateAbort))
	return cmd
}

func newReviewListCmd(d *deps) *cobra.Command {
	var instanceID string
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the reviews awaiting a decision",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				var all []review.Record
				for _, docs := range reviewStores(st) {
					list, err := review.ListAwaiting(ctx, docs, instanceID)
					if err != nil {
						return err
					}
					all = append(all, list...)
				}
				if all == nil {
					all = []review.Record{}
				}
				return out.print(d.stdout, all, func(w io.Writer) error {
					if len(all) == 0 {
						_, err := fmt.Fprintln(w, "No review is awaiting a decision.")
						return err
					}
					tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
					fmt.Fprintln(tw, "INSTANCE\tSTEP\tLABEL\tAWAITING SINCE")
					for _, r := range all {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.InstanceID, r.StepID, r.Label, r.AwaitingAt)
					}
					return tw.Flush()
				})
			})
		},
	}
	cmd.Flags().StringVar(&instanceID, "instance-id", "", "only the reviews of this task instance")
	out = addOutputFlag(cmd, formatTable)
	return cmd
}

func newReviewDecideCmd(d *deps, decision string) *cobra.Command {
	var instanceID, stepID, by string
	what := map[string]string{review.StateContinue: "let the paused run go on", review.StateAbort: "fail the paused run at its review step"}
	cmd := &cobra.Command{
		Use:   decision,
		Short: "Record " + decision + " on an awaiting review: " + what[decision],
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if instanceID == "" {
				return &registry.InvalidError{Field: "instance-id", Reason: "is required (agent-env review list shows the awaiting reviews)"}
			}
			if stepID == "" {
				return &registry.InvalidError{Field: "step-id", Reason: "is required (agent-env review list shows the awaiting reviews)"}
			}
			if by == "" {
				by = os.Getenv("USER")
			}
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				r, err := review.Decide(ctx, st.docsFor(instanceID), instanceID, stepID, decision, by)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(d.stdout, "Recorded %s on review %s of %s.\n", r.State, r.StepID, r.InstanceID)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&instanceID, "instance-id", "", "the task instance paused at the review (required)")
	cmd.Flags().StringVar(&stepID, "step-id", "", "the review step's id (required)")
	cmd.Flags().StringVar(&by, "decided-by", "", "who decides, recorded with the decision (default $USER)")
	return cmd
}

// reviewStores are the stores a run may have registered its reviews in:
// the configured one and the @local one when they differ.
func reviewStores(st *storeSet) []registry.DocumentStore {
	if st.Local == nil || st.Local == st.Documents {
		return []registry.DocumentStore{st.Documents}
	}
	return []registry.DocumentStore{st.Documents, st.Local}
}
