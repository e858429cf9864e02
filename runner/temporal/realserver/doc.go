// Package realserver is the Temporal runner's real-server test tier: the
// agent-env command itself (two `agent-env worker` processes, `task run`,
// `eval run`, `task status`, `task cancel`) against the dev server that
// integration/temporal/build-devserver.sh builds.
//
// Why a package of its own: the tier needs the dev server binary
// (AGENTENV_TEMPORAL_DEVSERVER) and builds agent-env, so scripts/test.sh
// runs it as the "temporal" group, after the main suite, and skips it
// where the binary is not built. It holds tests only.
package realserver
