package pgserver

import (
	"context"

	"github.com/jackc/pgx/v5/pgconn"
)

// Ping connects to the postgres database at addr (host:port) as the
// postgres user and closes the connection: nil once the server accepts
// sessions.
func Ping(ctx context.Context, addr string) error {
	c, err := pgconn.Connect(ctx, URL(addr))
	if err != nil {
		return err
	}
	return c.Close(ctx)
}
