// Package temporaltest starts a real Temporal server for tests: the
// in-memory dev server that integration/temporal/build-devserver.sh
// builds, named by the AGENTENV_TEMPORAL_DEVSERVER variable.
//
// Why a separate binary rather than the server in the test process: the
// server module pins its own gRPC and SDK versions, so it is built in its
// own module and the tests reach it over loopback like any worker would.
// Without the variable, StartServer skips the test (fails it under
// CI=true), so the real-server tier runs where the binary is built and
// nowhere else.
//
//	srv := temporaltest.StartServer(t)
//	c, err := temporal.Dial(ctx, &temporal.ClientOptions{Address: srv.Address, Namespace: srv.Namespace})
package temporaltest
