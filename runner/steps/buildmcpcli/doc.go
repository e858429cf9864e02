// Package buildmcpcli is the build_mcp_cli step: it reads a deployed env's
// live tools (the gateway's POST /step list_tools, as the role the CLI
// will use) and stores a cli artifact, a static Go binary in which each
// tool is a subcommand and each parameter of its input schema a flag.
//
// The binary's source is one standard-library-only file
// (clitemplate/main.go) compiled together with the tool list, so the build
// needs the Go toolchain but no module download, and the same binary runs
// on the host, in a process sandbox or in a FROM scratch container. At run
// time it calls POST {gateway}/step with the AgentEnv-Role header:
//
//	email-cli --url http://127.0.0.1:PORT email_send_message --to bob@example.com --subject Hi --body Hello
//
// Build is the same generator without a run context, for
// `agent-env env mcp-server create-cli`.
package buildmcpcli
