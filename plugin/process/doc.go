// Package process runs process plugins: executables in any language that
// add step types and sandbox providers to agent-env by speaking JSON-RPC
// 2.0 (github.com/sourcegraph/jsonrpc2) over their stdin and stdout, one
// message per line. docs/plugins.md is the protocol; this package is the
// host side.
//
// Why a child process and not a library: a plugin written in Python or
// Rust needs no rebuild of agent-env, and a plugin that crashes, hangs or
// prints garbage can only fail the step it serves. Each Plugin keeps one
// process for the whole run (started on first use, restarted after it
// died, killed with its process group by Close), so a step costs one
// round trip, not a process start.
//
// Main types:
//
//   - Spec says how to start a plugin; Discover finds them ([plugins.<name>]
//     command = [...] in config.toml, or agentenv-plugin-<name> on PATH).
//   - Plugin is one plugin: Describe (the plugin/describe handshake, which
//     carries its settings), Call (bounded by its timeout; cancellation
//     reaches the plugin as $/cancelRequest), Close.
//   - Plugin.StepInfos adapts its step types to runner.StepInfo: the
//     fields are kept as given, checked against the type's JSON Schema and
//     by step/validate, and step/run returns context operations (Op) that
//     are validated and applied all or none. A plugin that declares
//     context_deltas gets the run context whole once per process, then
//     only a ContextDelta per step (delta.go).
//   - Provider and Sandbox adapt its sandbox providers to runner/sandbox
//     (they pass runner/sandboxtest).
//   - Set loads many plugins; Loaded.Registration is a loaded plugin's
//     record for the plugin registry (package plugin), which refuses names
//     a built-in or another plugin owns; Set.Close ends every process.
//
// Usage:
//
//	specs, errs := process.Discover(process.DiscoverOptions{Plugins: cfg.Plugins, Path: os.Getenv("PATH")})
//	set := process.Load(ctx, specs, &process.Options{Logger: log})
//	defer set.Close()
//	reg := plugin.NewRegistry(nil)
//	for _, l := range set.Plugins {
//		_ = reg.Add(l.Registration()) // a clash is listed as refused
//	}
//	r := runner.New(&runner.Options{Steps: reg.Steps()})
package process
