// Command agent-env is the AgentEnv CLI: run bundles (`agent-env run
// hello`), create and run tasks, inspect configuration and serve a local
// OCI registry.
//
// Commands are thin: each parses flags into a request, calls one library
// function (runner, runner/bundle, registry) and renders the result. The
// command tree is built by newRootCmd(deps) so that tests can run it with
// their own output buffers and state folders.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	// A closed stdout (agent-env run | head) must not kill the process
	// before teardown: with SIGPIPE notified, writes fail with EPIPE instead.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	go func() {
		for range pipes {
		}
	}()
	go func() {
		n := 0
		for s := range sigs {
			n++
			if n > 1 {
				os.Exit(exitCodeFor(s)) // a second signal: stop waiting for teardown
			}
			cancel(interruptFor(s))
		}
	}()
	code := execute(ctx, os.Args[1:], defaultDeps())
	signal.Stop(sigs)
	os.Exit(code)
}
