package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
)

// The artifact commands over registry/artifact.

func newArtifactCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "artifact",
		Short: "Store and fetch artifacts (files, environment data, skills, CLIs, VM images)",
		Long: "Artifacts are immutable, versioned inputs of tasks: every put stores a new version.\n" +
			"Refer to one as ID (latest) or ID:VERSION.",
	}
	file := &cobra.Command{Use: "file", Short: "File artifacts: one file each"}
	file.AddCommand(newArtifactFilePutCmd(d), newArtifactFileGetCmd(d))
	env := &cobra.Command{Use: "environment", Short: "Environment artifacts: a data file for one env's environment_name"}
	env.AddCommand(newArtifactEnvironmentPutCmd(d))
	universe := &cobra.Command{Use: "environment-universe", Short: "Environment universes: a set of environment artifacts, one per environment_name"}
	universe.AddCommand(newArtifactUniversePutCmd(d), newEnvUniverseGetCmd(d))
	cmd.AddCommand(file, newFileUniverseCmd(d), env, universe, newArtifactSkillCmd(d), newArtifactCLICmd(d), newArtifactVMImageCmd(d),
		newArtifactGetCmd(d), newArtifactGCCmd(d))
	return cmd
}

func newArtifactGCCmd(d *deps) *cobra.Command {
	var dryRun bool
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove the bytes of artifact puts that crashed before publishing",
		Long: "A put writes its bytes, then publishes them as a version. A put that crashed in between\n" +
			"leaves bytes no version points at; gc removes those once they are older than " + artifact.DefaultOrphanAge.String() + ".\n" +
			"Bytes any version points at, younger bytes and objects of older builds are never touched.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				res, err := st.CollectOrphanObjects(ctx, dryRun)
				if err != nil {
					return err
				}
				if out.structured() {
					return printJSON(d, map[string]any{"removed": res.Removed, "dry_run": dryRun, "younger_than_threshold": res.Young})
				}
				verb := "Removed"
				if dryRun {
					verb = "Would remove"
				}
				for _, k := range res.Removed {
					fmt.Fprintf(d.stdout, "%s %s\n", verb, k)
				}
				fmt.Fprintf(d.stdout, "%s %d orphan object(s); %d object(s) younger than %s not judged\n", verb, len(res.Removed), res.Young, artifact.DefaultOrphanAge)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	out = addOutputFlag(cmd, formatTable)
	return cmd
}

func newArtifactFilePutCmd(d *deps) *cobra.Command {
	var id, filename, description, contentType string
	var out *outputFlag
	cmd := &cobra.Command{
		Use:     "put FILE --id ID",
		Short:   "Store FILE as a new version of file artifact ID",
		Example: "  agent-env artifact file put ./hello.txt --id greeting-text",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fh, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer fh.Close()
			if filename == "" {
				filename = baseName(args[0])
			}
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				f, err := st.ArtifactsFor(id).PutFile(ctx, id, artifact.FileInput{Filename: filename, ContentType: contentType,
					Description: description, Body: fh})
				if err != nil {
					return err
				}
				if out.structured() {
					return printJSON(d, f)
				}
				fmt.Fprintf(d.stdout, "Created FileArtifact: id=%s version=%d filename=%s size=%d\n", f.ID, f.Version, f.Filename, f.Size)
				return nil
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&id, "id", "", "artifact id (required)")
	fl.StringVar(&filename, "filename", "", "file name stored with the artifact (default: FILE's base name; may contain '/')")
	fl.StringVar(&description, "description", "", "free text")
	fl.StringVar(&contentType, "content-type", "", "MIME type (default: from the file name's extension)")
	out = addOutputFlag(cmd, formatTable)
	_ = cmd.MarkFlagRequired("id")
	return cmd
}

func newArtifactFileGetCmd(d *deps) *cobra.Command {
	var id, outputDir string
	var version int
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "get ID[:VERSION]",
		Short: "Print a file artifact, or write its file with --output-dir",
		Example: "  agent-env artifact file get --id greeting-text\n" +
			"  agent-env artifact file get --id greeting-text:2 --output-dir ./out",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := refFlag(id, version)
			if err != nil {
				return err
			}
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				arts := st.ArtifactsFor(ref.ID)
				f, err := arts.GetFile(ctx, ref)
				if err != nil {
					return err
				}
				if outputDir == "" {
					return printJSON(d, f)
				}
				path, err := arts.WriteFile(ctx, f.Ref(), outputDir)
				if err != nil {
					return err
				}
				if out.structured() {
					return printJSON(d, map[string]any{"path": path, "artifact": f})
				}
				fmt.Fprintf(d.stdout, "Wrote %s (id=%s version=%d, %d bytes)\n", path, f.ID, f.Version, f.Size)
				return nil
			})
		},
	}
	fl := cmd.Flags()
	idArg(cmd, &id, idSpec{noun: "artifact", complete: d.completeDocs(registry.Artifacts)})
	fl.IntVar(&version, "version", 0, "version (default latest)")
	fl.StringVar(&outputDir, "output-dir", "", "write the file to DIR/<filename> instead of printing the record")
	out = addOutputFlag(cmd, formatTable)
	return cmd
}

func newArtifactEnvironmentPutCmd(d *deps) *cobra.Command {
	var id, envName, description, filename string
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "put FILE --id ID --environment-name NAME",
		Short: "Store FILE as env data: file artifact ID-file plus environment artifact ID",
		Long: "Store FILE as the data of an environment: the bytes become file artifact ID-file and\n" +
			"environment artifact ID pins it under environment_name NAME (the name in the env's card).\n" +
			"load_artifact loads it into a deployed env with that environment_name.",
		Example: "  agent-env artifact environment put ./items.json --id items-data --environment-name items",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fh, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer fh.Close()
			if filename == "" {
				filename = baseName(args[0])
			}
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				e, err := st.ArtifactsFor(id).PutEnvironment(ctx, id, artifact.EnvironmentInput{EnvironmentName: envName,
					Description: description, Filename: filename, Body: fh})
				if err != nil {
					return err
				}
				if out.structured() {
					return printJSON(d, e)
				}
				fmt.Fprintf(d.stdout, "Created file artifact: id=%s version=%d\n", e.FileArtifactRef.ID, e.FileArtifactRef.Version)
				fmt.Fprintf(d.stdout, "Created EnvironmentArtifact: id=%s version=%d environment_name=%s\n", e.ID, e.Version, e.EnvironmentName)
				return nil
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&id, "id", "", "artifact id (required)")
	fl.StringVar(&envName, "environment-name", "", "the env's environment_name (required)")
	fl.StringVar(&filename, "filename", "", "file name inside the env (default: FILE's base name)")
	fl.StringVar(&description, "description", "", "free text")
	out = addOutputFlag(cmd, formatTable)
	_ = cmd.MarkFlagRequired("id")
	_ = cmd.MarkFlagRequired("environment-name")
	return cmd
}

func newArtifactUniversePutCmd(d *deps) *cobra.Command {
	var id, description string
	var envs, metadata []string
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "put --id ID --environment-artifact ID[:VERSION]...",
		Short: "Store a set of environment artifacts (one per environment_name) as universe ID",
		Long: "Store a new version of environment universe ID. Each --environment-artifact is pinned\n" +
			"to its latest version when none is given; two artifacts for the same environment_name\n" +
			"are refused. --metadata NAME=ID[:VERSION] attaches any other artifact by name.",
		Example: "  agent-env artifact environment-universe put --id shop --environment-artifact items-data --environment-artifact users-data:2",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			refs := make([]registry.Ref, 0, len(envs))
			for _, e := range envs {
				r, err := registry.ParseRef(e)
				if err != nil {
					return fmt.Errorf("--environment-artifact %q: %w", e, err)
				}
				refs = append(refs, r)
			}
			meta := map[string]registry.Ref{}
			for _, m := range metadata {
				name, ref, ok := strings.Cut(m, "=")
				if !ok || name == "" {
					return fmt.Errorf("--metadata %q: want NAME=ID[:VERSION]", m)
				}
				r, err := registry.ParseRef(ref)
				if err != nil {
					return fmt.Errorf("--metadata %q: %w", m, err)
				}
				meta[name] = r
			}
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				u, err := st.ArtifactsFor(id).PutEnvironmentUniverse(ctx, id, refs, meta, description)
				if err != nil {
					return err
				}
				if out.structured() {
					return printJSON(d, u)
				}
				pinned := make([]string, 0, len(u.EnvironmentArtifactRefs))
				for _, r := range u.EnvironmentArtifactRefs {
					pinned = append(pinned, r.String())
				}
				fmt.Fprintf(d.stdout, "Created EnvironmentUniverseArtifact: id=%s version=%d environments=%d (%s)\n",
					u.ID, u.Version, len(u.EnvironmentArtifactRefs), strings.Join(pinned, ", "))
				return nil
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&id, "id", "", "universe id (required)")
	fl.StringArrayVar(&envs, "environment-artifact", nil, "an environment artifact, ID or ID:VERSION (repeatable, at least one)")
	fl.StringArrayVar(&metadata, "metadata", nil, "NAME=ID[:VERSION] of another artifact to attach (repeatable)")
	fl.StringVar(&description, "description", "", "free text")
	out = addOutputFlag(cmd, formatTable)
	_ = cmd.MarkFlagRequired("id")
	_ = cmd.MarkFlagRequired("environment-artifact")
	return cmd
}

func newArtifactGetCmd(d *deps) *cobra.Command {
	var out *outputFlag
	var id string
	var version int
	cmd := &cobra.Command{
		Use:   "get ID[:VERSION]",
		Short: "Print any artifact record as JSON",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := refFlag(id, version)
			if err != nil {
				return err
			}
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				doc, err := st.ArtifactsFor(ref.ID).Get(ctx, ref)
				if err != nil {
					return err
				}
				return out.print(d.stdout, doc.Data, nil)
			})
		},
	}
	idArg(cmd, &id, idSpec{noun: "artifact", complete: d.completeDocs(registry.Artifacts)})
	cmd.Flags().IntVar(&version, "version", 0, "version (default latest)")
	out = addOutputFlag(cmd, formatJSON)
	return cmd
}

// refFlag combines --id (id or id:version) and --version.
func refFlag(id string, version int) (registry.Ref, error) {
	ref, err := registry.ParseRef(id)
	if err != nil {
		return ref, fmt.Errorf("--id: %w", err)
	}
	if version < 0 {
		return ref, fmt.Errorf("--version must be positive, got %d", version)
	}
	if version > 0 {
		if ref.Version > 0 && ref.Version != version {
			return ref, fmt.Errorf("--id %s and --version %d disagree", id, version)
		}
		ref.Version = version
	}
	return ref, nil
}

func baseName(p string) string {
	p = strings.TrimRight(p, "/")
	return p[strings.LastIndex(p, "/")+1:]
}
