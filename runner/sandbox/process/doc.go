// Package process is the process sandbox provider: an envdeploy.Backend
// that runs an environment's or agent's static Go binary as a local process
// on a loopback port, for development and for machines without Docker. A
// group is a state folder <root>/agentenv-<id>/ holding the binaries, their
// logs and group.json (labels, pids, ports), so that another CLI process
// can tear it down or prune it. Workloads reach each other at
// http://127.0.0.1:<port>: there are no network aliases, so the topology
// code uses the Internal URL each Run returns.
//
// An env or agent registered from a Go package keeps its binary as an
// artifact, so the same registration deploys with this provider or with
// Docker.
package process
