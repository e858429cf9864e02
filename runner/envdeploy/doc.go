// Package envdeploy puts and deploys environments and agents: it registers
// MCP server, multi and gateway envs and A2A agents (images built offline,
// kept as tarballs and static binaries in the object store), and deploys
// them through a Backend following the gateway topology:
// one workload per MCP server (MCP_HOST, MCP_PORT=18765, ENVIRONMENT_NAME,
// reachable by the env name), one gateway (INTERNAL_MCP_SERVERS,
// REST_PROXY_URLS, MCP_SERVER_NAME, GATEWAY_MODE) that alone is published on
// 127.0.0.1, readiness through the gateway's card, and an env_instances
// record. An mcp_server env registered with env_provider_type "server"
// deploys alone instead (server.go): one published workload, no gateway,
// its own card as the env's card; CheckTopology refuses, at put and at
// deploy, a document that topology can never deploy. Agents run one
// workload each with A2A_PORT, inside the groups of the envs they use.
//
// A Backend is a group runner: the Docker backend (runner/sandbox/docker)
// maps a group to a bridge network and a workload to a container; the
// process backend (runner/sandbox/process) maps a workload to a local
// process on a loopback port. The topology is written once, here, against
// the Backend interface; backendtest is the conformance suite both pass.
//
// Everything a backend creates carries Labels (instance, store, owner pid
// and start time, expiry, persistence), so Prune can remove what a killed
// process of this store left behind (PruneRule), and a cancelled or failed
// deploy removes its partial group on a fresh context bounded by
// CleanupTimeout.
package envdeploy
