package main

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry/redact"
	"github.com/agentenv/agentenv/runner/bundles"
	"github.com/agentenv/agentenv/runner/sandbox/local"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// deps is everything a command needs from the outside world; tests build
// their own.
type deps struct {
	stdout, stderr io.Writer
	// bundles is the installed bundle tree (<package>/<bundle>/).
	bundles fs.FS
	// sandboxRoot is where local work folders go.
	sandboxRoot func() string
	// openStores opens the configured stores.
	openStores func(ctx context.Context) (*storeSet, error)
	// getenv reads the environment.
	getenv func(string) string
	// verbose is set by -v.
	verbose bool
}

func defaultDeps() *deps {
	return &deps{
		stdout:      os.Stdout,
		stderr:      os.Stderr,
		bundles:     bundles.FS(),
		sandboxRoot: local.DefaultRoot,
		openStores:  openDefaultStores,
		getenv:      os.Getenv,
	}
}

func (d *deps) logger() *slog.Logger {
	level := slog.LevelWarn
	if d.verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewJSONHandler(d.stderr, &slog.HandlerOptions{Level: level, ReplaceAttr: redact.ReplaceAttr}))
}

// newRootCmd builds a fresh command tree.
func newRootCmd(d *deps) *cobra.Command {
	root := &cobra.Command{
		Use:           "agent-env",
		Short:         "Build environments for AI agents, run agents in them, and score what they did",
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			d.stdout, d.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
		},
	}
	root.PersistentFlags().BoolVarP(&d.verbose, "verbose", "v", false, "log details to stderr")
	root.AddCommand(newRunCmd(d), newTaskCmd(d), newConfigCmd(d), newRegistryCmd(d))
	return root
}
