package main

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/registry/stores"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox/kubernetes"
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
	// openStoresFor opens the stores of a configuration.
	openStoresFor func(ctx context.Context, cfg *config.Config, reg *stores.Registry) (*storeSet, error)
	// getenv reads the environment.
	getenv func(string) string
	// verbose is set by -v.
	verbose bool
	// logFormat is --log-format: "text" (default) or "json".
	logFormat string
	// output is the running command's -o flag (nil: it has none).
	output *outputFlag

	// plugins is the plugin registry (plugins.go); pluginSet replaces
	// plugin.Registered (tests).
	plugins           *plugin.Registry
	pluginSet         func() []plugin.Plugin
	pluginsConfigured sync.Once
	// proc is the process plugins of the command (processplugins.go).
	proc processPlugins
	// kubePushes is shared by every kubernetes provider of the process
	// (one per task of an eval), so each image is pushed once.
	kubePushes kubernetes.PushCache
}

func defaultDeps() *deps {
	return &deps{
		stdout:        os.Stdout,
		stderr:        os.Stderr,
		sandboxRoot:   local.DefaultRoot,
		openStoresFor: openConfiguredStores,
		getenv:        os.Getenv,
	}
}

func (d *deps) logger() *slog.Logger {
	level := slog.LevelWarn
	if d.verbose {
		level = slog.LevelDebug
	}
	return slog.New(newLogHandler(d.stderr, d.logFormat, level))
}

// newRootCmd builds a fresh command tree.
func newRootCmd(d *deps) *cobra.Command {
	root := &cobra.Command{
		Use:   "agent-env",
		Short: "Build environments for AI agents, run agents in them, and score what they did",
		Long: "Build environments for AI agents, run agents in them, and score what they did.\n\n" +
			"Start here:\n" +
			"  agent-env run hello                      run the built-in hello bundle (no containers, no model)\n" +
			"  agent-env run                            list the installed bundles and their folders\n" +
			"  agent-env task create steps.json --id T  store a task (a JSON array of steps)\n" +
			"  agent-env task run T                     run a stored task\n" +
			"  agent-env bundle init ./my-T --from-task T   write a stored task as a folder to edit and run\n\n" +
			"Everything is stored under $XDG_STATE_HOME/agent-env (default ~/.local/state/agent-env);\n" +
			"settings come from .agentenv/config.toml (see agent-env config show).",
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			d.stdout, d.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			d.output = outputOf(cmd)
			if err := checkLogFormat(d.logFormat); err != nil {
				d.logFormat = logText
				d.logger().Warn(err.Error() + "; logging text")
			}
		},
	}
	root.PersistentFlags().BoolVarP(&d.verbose, "verbose", "v", false, "log details to stderr")
	root.PersistentFlags().StringVar(&d.logFormat, "log-format", logText, "log lines on stderr: text (for people) or json (for programs)")
	root.AddCommand(newRunCmd(d), newTaskCmd(d), newConfigCmd(d), newRegistryCmd(d))
	root.AddCommand(newEnvCmd(d), newA2AAgentCmd(d), newSandboxCmd(d)) // sandboxes (env.go, agent.go, sandbox.go)
	root.AddCommand(newEpisodeCmd(d))                                  // episodes (episode.go)
	root.AddCommand(newArtifactCmd(d), newBundleCmd(d))                // artifact.go, bundle.go
	root.AddCommand(newEvalCmd(d))                                     // eval.go
	root.AddCommand(newUpCmd(d))                                       // explorer (up.go)
	root.AddCommand(newWorkerCmd(d))                                   // Temporal worker (worker.go)
	root.AddCommand(newVersionCmd(d))                                  // versioncmd.go
	root.AddCommand(newReviewCmd(d))                                   // review.go
	d.wirePlugins(root)                                                // plugin commands, `plugin ...` (plugins.go)
	return root
}

// loadConfig reads config.toml; a missing AGENT_ENV_CONFIG
// file fails every command that needs configuration.
func (d *deps) loadConfig() (*config.Config, error) {
	cfg, err := config.Load(d.configOptions()) // names plugins add are valid (plugins.go)
	if d.unknownSandboxName(err) {             // a process plugin may provide it (plugins.go)
		d.startProcessPlugins(context.Background())
		cfg, err = config.Load(d.configOptions())
	}
	if err == nil {
		d.configurePlugins(cfg)
	}
	return cfg, err
}

// openStores loads the configuration and opens its stores; config
// warnings (unknown keys) are logged.
func (d *deps) openStores(ctx context.Context) (*storeSet, error) {
	cfg, err := d.loadConfig()
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings {
		d.logger().Warn("config: " + w.String())
	}
	st, err := d.openStoresFor(ctx, cfg, d.storeRegistry())
	if err != nil {
		return nil, err
	}
	st.defaultSandbox = cfg.Sandbox.Default
	d.markAbandoned(ctx, st)
	return st, nil
}

// markAbandoned marks the running task instances whose process is gone
// (killed, crashed) as abandoned: without it they would stay running
// forever. Best effort: a failure is logged, the command goes on.
func (d *deps) markAbandoned(ctx context.Context, st *storeSet) {
	for _, ds := range st.documentStores() {
		marked, err := runner.MarkAbandoned(ctx, ds, time.Now())
		for _, inst := range marked {
			d.logger().Warn("task instance abandoned: the process running it is gone (agent-env sandbox prune removes its sandboxes)",
				"instance_id", inst.InstanceID, "pid", inst.Owner.PID)
		}
		if err != nil {
			d.logger().Warn("marking abandoned task instances failed", "error", err)
		}
	}
}
