// Package gateway is the front door of a deployed environment
// (agentenv-gateway; docs/gateway.md). It merges the tools of several
// backing MCP env servers into one MCP endpoint, filters them per role, and
// serves the REST control routes (/step, /state, /tools/*), the env
// trajectory, a composed env card, the env-level data plane and a streaming
// reverse proxy to each backing server, all on one port.
//
// It is a library so that it embeds cleanly in tests and in the runner:
//
//	cfg, err := gateway.ConfigFromEnv(os.Getenv) // or build a Config
//	g, err := gateway.New(cfg, nil)
//	defer g.Close()
//	err = g.Run(ctx, listener) // or serve g.Handler() yourself after g.Start()
//
// Main pieces, one file per concern:
//
//   - config.go: the environment variables, typed and validated.
//   - children.go: one process-wide MCP client session per backing server
//     ("generation"), opened lazily by one owner, replaced when it dies,
//     with the retry rule (a call that never reached a dead child is
//     retried once; one that may have reached it is not).
//   - registry.go, discovery.go: concurrent, paginated tools/list with raw
//     descriptors (so every field passes through byte-exact), collision
//     handling, optional server prefixes, re-discovery on
//     notifications/tools/list_changed and after a reopen.
//   - calls.go: the tool-call chain. Every concern of a call (role rules,
//     trajectory, trigger evaluation, the consistent-mode lock and changelog
//     bracketing) is a Middleware around one dispatcher, so /mcp and /step
//     enforce exactly the same rules.
//   - mcp.go: /mcp. mcp-go serves the transport; tools/list and tools/call
//     are answered by the gateway itself, which is how descriptors stay
//     verbatim and disabled or unknown tools become isError results instead
//     of JSON-RPC errors.
//   - step.go, roles.go: /step, /state and the role rules.
//   - auth.go: who a request speaks for (the AgentEnv-Role header rules,
//     role credentials, the control token); docs/security.md says why.
//   - trajectory.go: the JSONL trajectory, written by one goroutine so a
//     tool call never waits on disk; ids continue across restarts.
//   - card.go, dataplane.go, proxy.go: the composed card (cached with
//     background revalidation), /agentenv forwarding and /svc, /website.
//   - toolsource.go: built-in sources of native tools (Options.ToolSources;
//     gateway/browser's computer-use tools), whose results may record
//     something else in the trajectory (a screenshot's object link).
//   - bodies.go, trajcap.go: large calls are held once each way, and the
//     trajectory stores at most GATEWAY_TRAJECTORY_MAX_FIELD_BYTES per value.
//   - sessionexpiry.go, liveness.go: idle inbound sessions end, and /readyz
//     follows backing servers that stop answering after startup.
//
// The virtual clock and the trigger engine live in the subpackages vclock
// and triggers; the gateway mounts their routes and feeds them every
// completed call.
package gateway
