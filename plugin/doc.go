// Package plugin is the registry through which plugins add step types,
// env backends, sandbox providers, stores, CLI commands and bundles to
// agent-env without forking it.
//
// There is one typed registry per kind of contribution, and each lists the
// built-ins first. A plugin adds names; it never replaces a built-in or
// another plugin's name: a clash refuses the plugin with an error that
// names both owners (*ClashError), and the CLI refuses to start with it.
//
// A Go plugin is a package that registers itself from init(), the way
// database/sql drivers and Caddy modules do, and is compiled into a custom
// agent-env by `agent-env plugin add`:
//
//	func init() {
//		plugin.Register(plugin.Plugin{
//			Name:    "dice",
//			Version: "v0.1.0",
//			Steps:   []runner.StepInfo{{Type: "roll_dice", New: func() runner.Step { return &Roll{} }}},
//			Bundles: bundleFiles, // an embed.FS with <bundle>/ folders
//		})
//	}
//
// The CLI builds a Registry at start-up: the built-in record first
// (Builtin), then every Go plugin registered by init (Registered), then the
// process plugins it finds (Add with Kind KindProcess). Configure hands
// each plugin its [plugins.<name>] settings and applies [task_steps]
// impls; the accessors (Steps, Sandboxes, EnvBackends, Stores, Commands,
// BundleFS) then return the built-ins followed by the active plugins'
// contributions, ready for runner.Options and the CLI wiring.
//
// Only the list filled by Register is package state: everything else is a
// Registry value, so tests build their own.
package plugin
