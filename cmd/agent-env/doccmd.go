package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
)

// newDocGetCmd is `<noun> get --id [--version]`: print one stored
// document of c as JSON. Tasks and evals share it.
func newDocGetCmd(d *deps, c registry.Collection, noun string) *cobra.Command {
	var id string
	var version int
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Print a stored " + noun + " as JSON",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				doc, err := st.docsFor(id).Get(ctx, c, registry.Ref{ID: id, Version: version})
				if err != nil {
					return err
				}
				return printJSON(d, doc.Data)
			})
		},
	}
	idArg(cmd, &id, idSpec{noun: noun, complete: d.completeDocs(c)})
	cmd.Flags().IntVar(&version, "version", 0, "version (default latest)")
	return cmd
}

// newDocListCmd is `<noun> list [--local] [--limit]`: the latest version
// of each document of c, with the length of its list field (a task's
// steps, an eval's tasks) under the column header count.
func newDocListCmd(d *deps, c registry.Collection, noun, field, count string) *cobra.Command {
	var local bool
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List stored " + noun + "s (latest version of each)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				docs := st.Documents
				if local {
					docs = st.Local
				}
				list, err := docs.List(ctx, c, &registry.ListOptions{Limit: limit})
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(d.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "ID\tVERSION\t%s\tCREATED (UTC)\n", count)
				for _, doc := range list {
					var body map[string]json.RawMessage
					var items []json.RawMessage
					if doc.Decode(&body) == nil {
						_ = json.Unmarshal(body[field], &items)
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", doc.ID, doc.Version, len(items), registry.FormatMinute(doc.CreatedAt))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&local, "local", false, "list the @local store (bundle "+noun+"s)")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many")
	return cmd
}
