// Command db-env serves the db MCP server of a service_db env on
// $MCP_HOST:$MCP_PORT over the database at $DATABASE_URL, waiting for
// the database first (it starts beside it). $DB_WRITE_ROLES is a comma
// list of the roles that may write ("*" = every caller; empty =
// read-only).
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentenv/agentenv/examples/envs/servicedb"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		slog.Error("db-env", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return err // the message never holds the URL's password
	}
	defer pool.Close()
	if err := waitDB(ctx, pool, 120*time.Second); err != nil {
		return err
	}
	var roles []string
	for _, r := range strings.Split(os.Getenv("DB_WRITE_ROLES"), ",") {
		if r = strings.TrimSpace(r); r != "" {
			roles = append(roles, r)
		}
	}
	s, db := servicedb.New(pool, &servicedb.Options{WriteRoles: roles})
	if err := db.InstallChangelog(ctx); err != nil {
		// Changelog ids stay null; the tools work as before.
		slog.Warn("db-env: serving without a changelog", "err", err)
	}
	return s.Run(ctx)
}

// waitDB pings until the database answers: serving MCP before it does
// would make the gateway report the env ready too early.
func waitDB(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 10 * time.Millisecond
	for {
		err := pool.Ping(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, 250*time.Millisecond)
	}
}
