package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
)

// The skill, cli and vm-image artifact commands. Each takes the artifact
// id as its first argument, or as --id.

func newArtifactSkillCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "skill", Short: "Skill artifacts: a folder with a SKILL.md at its root"}
	var dir string
	put := &cobra.Command{
		Use:   "put ID --skill-dir DIR",
		Short: "Store the skill folder DIR as a new version of skill ID",
		Long: "Store a skill: DIR must hold a SKILL.md whose YAML front matter has name (the id's last\n" +
			"segment: 1-64 lowercase letters, digits and single hyphens) and description (at most 1024\n" +
			"characters); license, compatibility, allowed-tools and metadata are optional. Every file\n" +
			"under DIR is stored with it (file universe ID-files).",
		Example: "  agent-env artifact skill put tidy --skill-dir ./skills/tidy",
	}
	put.Flags().StringVar(&dir, "skill-dir", "", "the skill folder (required)")
	putKind(d, put,
		func(ctx context.Context, arts *artifact.Store, id string) (any, string, error) {
			if dir == "" {
				return nil, "", errors.New("--skill-dir is required")
			}
			sk, err := arts.PutSkill(ctx, id, dir)
			if err != nil {
				return nil, "", err
			}
			return sk, fmt.Sprintf("Created SkillArtifact: id=%s version=%d name=%s spec_version=%s skill_files_id=%s",
				sk.ID, sk.Version, sk.SkillName, sk.AgentSkillsSpecVersion, sk.SkillFilesRef), nil
		})
	cmd.AddCommand(put,
		newKindGetCmd(d, "skill", "Print a skill artifact, or write its files with --output-dir",
			func(ctx context.Context, arts *artifact.Store, ref registry.Ref, dir string) (artifact.Header, []string, error) {
				sk, paths, err := arts.WriteSkill(ctx, ref, dir)
				if sk == nil {
					return artifact.Header{}, paths, err
				}
				return sk.Header, paths, err
			}),
		newKindListCmd(d, artifact.TypeSkill, "skill", "NAME", func(doc registry.Document) string {
			var sk artifact.Skill
			_ = doc.Decode(&sk)
			return sk.SkillName
		}))
	return cmd
}

func newArtifactCLICmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "cli", Short: "CLI artifacts: an executable or script, and the files it needs"}
	var in artifact.CLIInput
	var dir, file string
	put := &cobra.Command{
		Use:   "put ID (--cli-dir DIR --entrypoint PATH | --file FILE)",
		Short: "Store a command-line tool as a new version of cli artifact ID",
		Long: "Store a command-line tool: a folder (--cli-dir) with the executable at --entrypoint, or a\n" +
			"single executable or script (--file). The entrypoint must be executable or start with #!.\n" +
			"--command-name is the name it is installed under on PATH (default: the entrypoint's name).",
		Example: "  agent-env artifact cli put items-cli --cli-dir ./cli --entrypoint bin/items\n" +
			"  agent-env artifact cli put hello --file ./hello.py --command-name hello",
	}
	fl := put.Flags()
	fl.StringVar(&dir, "cli-dir", "", "the folder holding the tool")
	fl.StringVar(&file, "file", "", "a single executable or script")
	fl.StringVar(&in.Entrypoint, "entrypoint", "", "with --cli-dir: the executable's path within the folder")
	fl.StringVar(&in.CommandName, "command-name", "", "the name on PATH (default: the entrypoint's base name)")
	fl.StringVar(&in.EnvID, "env-id", "", "the env the tool was generated from")
	fl.IntVar(&in.EnvVersion, "env-version", 0, "that env's version")
	fl.StringVar(&in.Description, "description", "", "free text")
	putKind(d, put, func(ctx context.Context, arts *artifact.Store, id string) (any, string, error) {
		if (dir == "") == (file == "") {
			return nil, "", errors.New("give exactly one of --cli-dir or --file")
		}
		in.Path = dir + file
		c, err := arts.PutCLI(ctx, id, in)
		if err != nil {
			return nil, "", err
		}
		return c, fmt.Sprintf("Created CliArtifact: id=%s version=%d command_name=%s entrypoint=%s cli_files_id=%s",
			c.ID, c.Version, c.CommandName, c.Entrypoint, c.CLIFilesRef), nil
	})
	cmd.AddCommand(put,
		newKindGetCmd(d, "cli", "Print a cli artifact, or write its files (entrypoint executable) with --output-dir",
			func(ctx context.Context, arts *artifact.Store, ref registry.Ref, dir string) (artifact.Header, []string, error) {
				c, paths, err := arts.WriteCLI(ctx, ref, dir)
				if c == nil {
					return artifact.Header{}, paths, err
				}
				return c.Header, paths, err
			}),
		newKindListCmd(d, artifact.TypeCLI, "cli", "COMMAND", func(doc registry.Document) string {
			var c artifact.CLI
			_ = doc.Decode(&c)
			return c.CommandName
		}))
	return cmd
}

func newArtifactVMImageCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "vm-image", Short: "VM image artifacts: a disk image file, or the name of an image a provider knows"}
	var in artifact.VMImageInput
	put := &cobra.Command{
		Use:   "put ID (--file DISK_IMAGE | --image-name NAME | --ecr-url URL)",
		Short: "Store a VM disk image, or register an image name, as a new version of vm_image artifact ID",
		Long: "Store a VM image: --file streams a disk image file (qcow2, raw, ...) to the object store\n" +
			"without copying it first; --image-name or --ecr-url names an image a sandbox provider\n" +
			"already has. The sizing flags record what the image needs to boot.",
		Example: "  agent-env artifact vm-image put ubuntu --file ./ubuntu.qcow2 --os linux --disk-size-gb 20\n" +
			"  agent-env artifact vm-image put macos --image-name tahoe-cua --os macos",
	}
	fl := put.Flags()
	fl.StringVar(&in.Path, "file", "", "the disk image file")
	fl.StringVar(&in.ImageName, "image-name", "", "an image name the provider knows (default with --file: the file name)")
	fl.StringVar(&in.ECRURL, "ecr-url", "", "a registry URL of a containerdisk image")
	fl.StringVar(&in.OS, "os", "", "OS identifier, when the provider needs it (macos)")
	fl.Float64Var(&in.DiskSizeGB, "disk-size-gb", 0, "root disk size the image needs, GiB")
	fl.Float64Var(&in.CPU, "cpu", 0, "vCPUs")
	fl.IntVar(&in.MemoryMB, "memory-mb", 0, "memory, MiB")
	fl.StringVar(&in.SandboxType, "sandbox-type", "", "the sandbox provider the image is for")
	fl.StringVar(&in.Description, "description", "", "free text")
	putKind(d, put, func(ctx context.Context, arts *artifact.Store, id string) (any, string, error) {
		v, err := arts.PutVMImage(ctx, id, in)
		if err != nil {
			return nil, "", err
		}
		line := fmt.Sprintf("Created VMImageArtifact: id=%s version=%d image_name=%s", v.ID, v.Version, v.ImageName)
		if v.DiskImageSize > 0 {
			line += fmt.Sprintf(" file=%s size=%d", v.Filename, v.DiskImageSize)
		}
		return v, line, nil
	})
	cmd.AddCommand(put,
		newKindGetCmd(d, "vm_image", "Print a vm_image artifact, or write its disk image with --output-dir",
			func(ctx context.Context, arts *artifact.Store, ref registry.Ref, dir string) (artifact.Header, []string, error) {
				p, v, err := arts.WriteVMImage(ctx, ref, dir)
				if v == nil {
					return artifact.Header{}, nil, err
				}
				if err != nil {
					return v.Header, nil, err
				}
				return v.Header, []string{p}, nil
			}),
		newKindListCmd(d, artifact.TypeVMImage, "vm_image", "IMAGE", func(doc registry.Document) string {
			var v artifact.VMImage
			_ = doc.Decode(&v)
			if v.ImageName != "" {
				return v.ImageName
			}
			return v.ECRURL
		}))
	return cmd
}

// putKind completes a put command: ID as the first argument or --id,
// --json, and the printed line.
func putKind(d *deps, cmd *cobra.Command,
	put func(ctx context.Context, arts *artifact.Store, id string) (rec any, line string, err error)) {
	var id string
	var out *outputFlag
	idArg(cmd, &id, idSpec{noun: "artifact"}) // ID or --id (args.go)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
			rec, line, err := put(ctx, st.ArtifactsFor(id), id)
			if err != nil {
				return err
			}
			if out.structured() {
				return printJSON(d, rec)
			}
			fmt.Fprintln(d.stdout, line)
			return nil
		})
	}
	out = addOutputFlag(cmd, formatTable)
}

// newKindGetCmd is `<kind> get ID[:VERSION]`: the stored document as JSON
// (every member, also those this build does not know), or with
// --output-dir the files written by write.
func newKindGetCmd(d *deps, typ, short string, write func(ctx context.Context, arts *artifact.Store, ref registry.Ref, dir string) (artifact.Header, []string, error)) *cobra.Command {
	var id, outputDir string
	var version int
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "get ID[:VERSION] [--output-dir DIR]",
		Short: short,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := refFlag(id, version)
			if err != nil {
				return err
			}
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				arts := st.ArtifactsFor(ref.ID)
				doc, err := arts.Get(ctx, ref)
				if err != nil {
					return err
				}
				if doc.Type != typ {
					return fmt.Errorf("%w: artifact %s is a %q, not a %q", registry.ErrInvalid, doc.Ref(), doc.Type, typ)
				}
				if outputDir == "" {
					return printJSON(d, doc.Data)
				}
				h, paths, err := write(ctx, arts, doc.Ref(), outputDir)
				if err != nil {
					return err
				}
				if out.structured() {
					return printJSON(d, map[string]any{"id": h.ID, "version": h.Version, "paths": paths})
				}
				for _, p := range paths {
					fmt.Fprintf(d.stdout, "Wrote %s\n", p)
				}
				fmt.Fprintf(d.stdout, "Done: id=%s version=%d, %d file(s) in %s\n", h.ID, h.Version, len(paths), outputDir)
				return nil
			})
		},
	}
	idArg(cmd, &id, idSpec{noun: "artifact"}) // ID[:VERSION] or --id (args.go)
	fl := cmd.Flags()
	fl.IntVar(&version, "version", 0, "version (default latest)")
	fl.StringVar(&outputDir, "output-dir", "", "write the files here instead of printing the record")
	out = addOutputFlag(cmd, formatTable)
	return cmd
}

// newKindListCmd is `<kind> list`: the latest version of each artifact of
// typ, with one column of its own.
func newKindListCmd(d *deps, typ, noun, column string, value func(registry.Document) string) *cobra.Command {
	var limit int
	var local bool
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List " + noun + " artifacts (latest version of each)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withStores(cmd.Context(), func(ctx context.Context, st *storeSet) error {
				arts := st.ArtifactsFor("")
				if local {
					arts = st.ArtifactsFor(registry.LocalPrefix)
				}
				list, err := arts.List(ctx, &registry.ListOptions{Type: typ, Limit: limit})
				if err != nil {
					return err
				}
				if out.structured() {
					docs := make([]any, 0, len(list))
					for _, doc := range list {
						docs = append(docs, doc.Data)
					}
					return printJSON(d, docs)
				}
				tw := tabwriter.NewWriter(d.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "ID\tVERSION\t%s\tCREATED (UTC)\n", column)
				for _, doc := range list {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", doc.ID, doc.Version, value(doc), registry.FormatMinute(doc.CreatedAt))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many")
	cmd.Flags().BoolVar(&local, "local", false, "list the @local store (bundle artifacts)")
	out = addOutputFlag(cmd, formatTable)
	return cmd
}
