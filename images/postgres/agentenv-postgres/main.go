// Command agentenv-postgres is the database workload of a service_db env:
// it runs Debian's PostgreSQL (internal/pgserver) on $MCP_HOST:$PGPORT
// (default 0.0.0.0:5432) with its data in $PGDATA (default: a temp folder
// removed on exit), and stops it on SIGTERM or SIGINT. It is a static
// binary, so the process provider runs it directly, and the Docker
// provider runs it in a FROM scratch image beside the binaries' library
// closure (docs/envtypes.md).
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/agentenv/agentenv/internal/pgserver"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	port := 5432
	if p := os.Getenv("PGPORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			log.Error("PGPORT is not a port number", "value", p)
			os.Exit(2)
		}
		port = n
	}
	listen := os.Getenv("MCP_HOST")
	if listen == "" {
		listen = "0.0.0.0"
	}
	s, err := pgserver.Start(ctx, &pgserver.Options{Listen: listen, Port: port, DataDir: os.Getenv("PGDATA"), Log: os.Stderr})
	if err != nil {
		log.Error("agentenv-postgres", "err", err)
		os.Exit(1)
	}
	log.Info("PostgreSQL ready", "addr", s.Addr())
	select {
	case <-ctx.Done():
	case <-s.Done():
		log.Error("postgres exited")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Stop(sctx)
}
