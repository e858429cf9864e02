// Command notes-env serves the notes environment on $MCP_HOST:$MCP_PORT
// (default 0.0.0.0:18765) until interrupted.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"example.com/notes"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := notes.New(nil).Run(ctx); err != nil {
		log.Fatal(err)
	}
}
