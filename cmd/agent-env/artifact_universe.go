package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
)

// file-artifact-universe and environment-universe get.

func newFileUniverseCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "file-artifact-universe", Short: "File universes: a tree of file artifacts loaded together"}
	cmd.AddCommand(newFileUniversePutCmd(d), newFileUniversePutBundledCmd(d), newFileUniverseGetCmd(d), newFileUniverseListCmd(d))
	return cmd
}

func printUniverse(d *deps, u *artifact.FileArtifactUniverse, asJSON bool) error {
	if asJSON {
		return printJSON(d, u)
	}
	fmt.Fprintf(d.stdout, "Created FileArtifactUniverse: id=%s version=%d file_count=%d\n", u.ID, u.Version, len(u.FileArtifactRefs))
	return nil
}

func newFileUniversePutCmd(d *deps) *cobra.Command {
	var id, description string
	var files []string
	var bundled bool
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "put --id ID --file-artifact ID[:VERSION]...",
		Short: "Group existing file artifacts (under their file names) as universe ID",
		Long: "Store a new version of universe ID from existing file artifacts; each member keeps its\n" +
			"file name and is pinned to its latest version when none is given.",
		Example: "  agent-env artifact file-artifact-universe put --id docs --file-artifact readme --file-artifact notes:2",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				members := map[string]registry.Ref{}
				for _, s := range files {
					ref, err := registry.ParseRef(s)
					if err != nil {
						return fmt.Errorf("--file-artifact %q: %w", s, err)
					}
					f, err := st.ArtifactsFor(ref.ID).GetFile(ctx, ref)
					if err != nil {
						return fmt.Errorf("--file-artifact %s: %w", s, err)
					}
					if prev, dup := members[f.Filename]; dup {
						return fmt.Errorf("--file-artifact %s: file name %s is already given by %s", s, f.Filename, prev)
					}
					members[f.Filename] = f.Ref()
				}
				u, err := st.ArtifactsFor(id).PutUniverse(ctx, id, members, &artifact.UniverseOptions{Description: description, Bundle: bundled})
				if err != nil {
					return err
				}
				return printUniverse(d, u, out.structured())
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&id, "id", "", "universe id (required)")
	fl.StringArrayVar(&files, "file-artifact", nil, "a member file artifact, ID or ID:VERSION (repeatable, at least one)")
	fl.StringVar(&description, "description", "", "free text")
	fl.BoolVar(&bundled, "bundle", false, "also store every member in one tar.gz")
	out = addOutputFlag(cmd, formatTable)
	_ = cmd.MarkFlagRequired("id")
	_ = cmd.MarkFlagRequired("file-artifact")
	return cmd
}

func newFileUniversePutBundledCmd(d *deps) *cobra.Command {
	var id, dir, description string
	var concurrency int
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "put-bundled --id ID --file-dir DIR",
		Short: "Store every file under DIR as universe ID (members ID/<path>, plus one tar.gz)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if concurrency < 1 {
				return fmt.Errorf("--concurrency must be at least 1, got %d", concurrency)
			}
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				u, err := st.ArtifactsFor(id).PutUniverseFromDir(ctx, id, dir,
					&artifact.UniverseOptions{Description: description, Bundle: true, Concurrency: concurrency})
				if err != nil {
					return err
				}
				return printUniverse(d, u, out.structured())
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&id, "id", "", "universe id (required)")
	fl.StringVar(&dir, "file-dir", "", "the folder to store (required)")
	fl.StringVar(&description, "description", "", "free text")
	fl.IntVar(&concurrency, "concurrency", 8, "parallel uploads")
	out = addOutputFlag(cmd, formatTable)
	_ = cmd.MarkFlagRequired("id")
	_ = cmd.MarkFlagRequired("file-dir")
	return cmd
}

func newFileUniverseGetCmd(d *deps) *cobra.Command {
	var ids []string
	var outputDir string
	cmd := &cobra.Command{
		Use:     "get --id ID[:VERSION]... [--output-dir DIR]",
		Aliases: []string{"get-many"},
		Short:   "Print universes, or write their files with --output-dir",
		Long: "Print each universe record as JSON, or with --output-dir write its files: one universe\n" +
			"goes to DIR/<file name>; several go to DIR/<universe id>/<file name>.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				for _, s := range ids {
					ref, err := registry.ParseRef(s)
					if err != nil {
						return fmt.Errorf("--id %q: %w", s, err)
					}
					arts := st.ArtifactsFor(ref.ID)
					u, err := arts.GetUniverse(ctx, ref)
					if err != nil {
						return err
					}
					if outputDir == "" {
						if err := printJSON(d, u); err != nil {
							return err
						}
						continue
					}
					dest := outputDir
					if len(ids) > 1 {
						dest = filepath.Join(outputDir, fileSafe(u.ID))
					}
					paths, err := arts.WriteUniverse(ctx, u.Ref(), dest)
					if err != nil {
						return err
					}
					fmt.Fprintf(d.stdout, "Wrote %d files of %s to %s\n", len(paths), u.Ref(), dest)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&ids, "id", nil, "universe id or id:version (repeatable, required)")
	addOutputFlag(cmd, formatJSON)
	cmd.Flags().StringVar(&outputDir, "output-dir", "", "write the files here instead of printing the records")
	_ = cmd.MarkFlagRequired("id")
	return cmd
}

func newFileUniverseListCmd(d *deps) *cobra.Command {
	var out *outputFlag
	var limit int
	var local bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List file universes (latest version of each)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				arts := st.ArtifactsFor("")
				if local {
					arts = st.ArtifactsFor(registry.LocalPrefix)
				}
				list, err := arts.List(ctx, &registry.ListOptions{Type: artifact.TypeFileArtifactUniverse, Limit: limit})
				if err != nil {
					return err
				}
				us := make([]artifact.FileArtifactUniverse, len(list))
				for i, doc := range list {
					_ = doc.Decode(&us[i])
				}
				return out.print(d.stdout, us, func(w io.Writer) error {
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tVERSION\tFILES\tCREATED (UTC)")
					for i, doc := range list {
						fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", doc.ID, doc.Version, len(us[i].FileArtifactRefs), registry.FormatMinute(doc.CreatedAt))
					}
					return tw.Flush()
				})
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many")
	cmd.Flags().BoolVar(&local, "local", false, "list the @local store (bundle artifacts)")
	out = addOutputFlag(cmd, formatTable)
	return cmd
}

func newEnvUniverseGetCmd(d *deps) *cobra.Command {
	var id, outputDir string
	cmd := &cobra.Command{
		Use:   "get ID[:VERSION] [--output-dir DIR]",
		Short: "Print an environment universe, or write its data files with --output-dir",
		Long:  "Print the universe record as JSON, or with --output-dir write each environment's data\nfile to DIR/<environment_name>/<file name>.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := refFlag(id, 0)
			if err != nil {
				return err
			}
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				arts := st.ArtifactsFor(ref.ID)
				u, err := arts.GetEnvironmentUniverse(ctx, ref)
				if err != nil {
					return err
				}
				if outputDir == "" {
					return printJSON(d, u)
				}
				var written []string
				for _, er := range u.EnvironmentArtifactRefs {
					e, err := arts.GetEnvironment(ctx, er)
					if err != nil {
						return err
					}
					p, err := arts.WriteFile(ctx, e.FileArtifactRef, filepath.Join(outputDir, e.EnvironmentName))
					if err != nil {
						return err
					}
					written = append(written, p)
				}
				sort.Strings(written)
				for _, p := range written {
					fmt.Fprintf(d.stdout, "Wrote %s\n", p)
				}
				return nil
			})
		},
	}
	idArg(cmd, &id, idSpec{noun: "universe", complete: d.completeDocs(registry.Artifacts)})
	addOutputFlag(cmd, formatJSON)
	cmd.Flags().StringVar(&outputDir, "output-dir", "", "write the data files here instead of printing the record")
	return cmd
}
