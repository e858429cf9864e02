package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
)

// newDocGetCmd is `<noun> get --id [--version]`: print one stored
// document of c as JSON. Tasks and evals share it.
func newDocGetCmd(d *deps, c registry.Collection, noun string) *cobra.Command {
	var id string
	var version int
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Print a stored " + noun + " as JSON",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				doc, err := st.docsFor(id).Get(ctx, c, registry.Ref{ID: id, Version: version})
				if err != nil {
					return err
				}
				return out.print(d.stdout, doc.Data, nil)
			})
		},
	}
	idArg(cmd, &id, idSpec{noun: noun, complete: d.completeDocs(c)})
	cmd.Flags().IntVar(&version, "version", 0, "version (default latest)")
	out = addOutputFlag(cmd, formatJSON)
	return cmd
}

// newDocListCmd is `<noun> list [--local] [--limit]`: the latest version
// of each document of c, with the length of its list field (a task's
// steps, an eval's tasks) under the column header count.
func newDocListCmd(d *deps, c registry.Collection, noun, field, count string) *cobra.Command {
	var local bool
	var limit int
	var out *outputFlag
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
				type row struct {
					ID        string `json:"id"`
					Version   int    `json:"version"`
					Count     int    `json:"count"`
					CreatedAt string `json:"created_at"`
				}
				rows := make([]row, 0, len(list))
				for _, doc := range list {
					var body map[string]json.RawMessage
					var items []json.RawMessage
					if doc.Decode(&body) == nil {
						_ = json.Unmarshal(body[field], &items)
					}
					rows = append(rows, row{doc.ID, doc.Version, len(items), doc.CreatedAt.UTC().Format(time.RFC3339)})
				}
				return out.print(d.stdout, rows, func(w io.Writer) error {
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintf(tw, "ID\tVERSION\t%s\tCREATED (UTC)\n", count)
					for i, r := range rows {
						fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", r.ID, r.Version, r.Count, registry.FormatMinute(list[i].CreatedAt))
					}
					return tw.Flush()
				})
			})
		},
	}
	cmd.Flags().BoolVar(&local, "local", false, "list the @local store (bundle "+noun+"s)")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many")
	out = addOutputFlag(cmd, formatTable)
	return cmd
}
