// Command devserver runs an in-memory Temporal server (the server module's
// temporaltest package) on 127.0.0.1 for the real-server test tier. It
// prints one JSON line, {"address":"127.0.0.1:PORT","namespace":"..."},
// once the frontend answers, and stops on SIGTERM or SIGINT.
//
// Why a binary of our own rather than the server in the test process: the
// server module pins its own gRPC and SDK versions, so it lives in this
// separate module and the tests talk to it over the network like any
// worker would.
package main

import (
	"encoding/json"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/server/temporaltest"
)

func main() {
	srv := temporaltest.NewServer()
	defer srv.Stop()
	line, _ := json.Marshal(map[string]string{
		"address":   srv.GetFrontendHostPort(),
		"namespace": srv.GetDefaultNamespace(),
	})
	os.Stdout.Write(append(line, '\n'))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
