package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/bundle"
)

// The id convention: a command that acts on one stored or deployed
// resource takes its id as its positional argument
//
//	agent-env task run q3
//	agent-env env deploy email
//	agent-env env teardown INSTANCE
//
// and keeps --id (and any older flag name such as --instance-id) as an
// alias, for scripts written for the reference CLI. A command adopts it
// with one call in place of its --id flag:
//
//	idArg(cmd, &id, idSpec{noun: "task", complete: d.completeDocs(registry.Tasks)})
//
// The id lands in the same variable either way, so RunE reads it as
// before. A command whose positional is something else (task create FILE)
// keeps --id as a flag.

// idSpec describes a command's resource id.
type idSpec struct {
	noun string // what the id names ("task", "env instance"), for messages
	// flags are the flag aliases; nil means just --id.
	flags []string
	// optional: the id may be left out (the flag's default applies).
	optional bool
	// def is the default of an optional id.
	def string
	// complete lists candidate ids for shell completion.
	complete completer
}

// completer returns the ids that start with prefix.
type completer func(ctx context.Context, prefix string) []string

// idArg makes *target the command's positional id with flag aliases.
func idArg(cmd *cobra.Command, target *string, spec idSpec) {
	if len(spec.flags) == 0 {
		spec.flags = []string{"id"}
	}
	for _, name := range spec.flags {
		cmd.Flags().StringVar(target, name, spec.def, "alias of the "+placeholder(spec.noun)+" argument")
		if spec.complete != nil {
			_ = cmd.RegisterFlagCompletionFunc(name, completeWith(spec.complete))
		}
	}
	if !strings.Contains(cmd.Use, " ") {
		arg := placeholder(spec.noun)
		if spec.optional {
			arg = "[" + arg + "]"
		}
		cmd.Use += " " + arg
	}
	cmd.Args = cobra.MaximumNArgs(1)
	if spec.complete != nil {
		cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return completeWith(spec.complete)(cmd, args, toComplete)
		}
	}
	prev := cmd.PreRunE
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			flagged := ""
			for _, name := range spec.flags {
				if cmd.Flags().Changed(name) {
					flagged = name
				}
			}
			if flagged != "" && *target != args[0] {
				return fmt.Errorf("the %s is given twice: %q and --%s %q", spec.noun+" id", args[0], flagged, *target)
			}
			*target = args[0]
		}
		if !spec.optional && strings.TrimSpace(*target) == "" {
			return fmt.Errorf("give the %s id: %s", spec.noun, cmd.UseLine())
		}
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}

// placeholder is the usage name of a noun's id: "task" → TASK, "env
// instance" → INSTANCE.
func placeholder(noun string) string {
	f := strings.Fields(noun)
	return strings.ToUpper(f[len(f)-1])
}

func completeWith(c completer) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		return c(ctx, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeDocs completes the ids of a versioned collection (tasks, evals,
// envs, agents), from the configured store and the @local one.
func (d *deps) completeDocs(c registry.Collection) completer {
	return func(ctx context.Context, prefix string) []string {
		var out []string
		_ = d.withStores(ctx, func(ctx context.Context, st *storeSet) error {
			for _, ds := range st.documentStores() {
				docs, err := ds.List(ctx, c, &registry.ListOptions{IDPrefix: prefix, Limit: 500})
				if err != nil {
					continue
				}
				for _, doc := range docs {
					out = append(out, doc.ID)
				}
			}
			return nil
		})
		return uniqueSorted(out)
	}
}

// completeRecords completes the keys of a record collection (env, agent
// and task instances).
func (d *deps) completeRecords(c registry.Collection) completer {
	return func(ctx context.Context, prefix string) []string {
		var out []string
		_ = d.withStores(ctx, func(ctx context.Context, st *storeSet) error {
			for _, ds := range st.documentStores() {
				recs, err := ds.QueryRecords(ctx, c, &registry.RecordQuery{KeyStart: prefix, Desc: true, Limit: 500})
				if err != nil {
					continue
				}
				for _, r := range recs {
					out = append(out, r.Key)
				}
			}
			return nil
		})
		return uniqueSorted(out)
	}
}

// completeBundles completes installed bundle names (a folder completes
// as a path when nothing matches).
func (d *deps) completeBundles(_ context.Context, prefix string) []string {
	all, err := bundle.Installed(d.bundles)
	if err != nil {
		return nil
	}
	var out []string
	for _, b := range all {
		if strings.HasPrefix(b.Name, prefix) {
			out = append(out, b.Name)
		}
	}
	return uniqueSorted(out)
}

// documentStores is the configured document store and, when it is
// another one, the @local store.
func (s *storeSet) documentStores() []registry.DocumentStore {
	docs := []registry.DocumentStore{s.Documents}
	if s.Local != s.Documents {
		docs = append(docs, s.Local)
	}
	return docs
}

func uniqueSorted(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
