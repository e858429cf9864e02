// Command pause is the Pod sandbox image of the test node
// (internal/kubecluster): it holds the Pod's namespaces by doing nothing
// until it is told to stop. It replaces registry.k8s.io/pause, which no
// test can pull; kubecluster puts it in a FROM scratch image.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// As PID 1 a process gets no default signal handling: without these
	// SIGTERM would be ignored and every Pod stop would wait for SIGKILL.
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
}
