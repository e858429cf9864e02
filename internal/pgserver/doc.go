// Package pgserver runs Debian's PostgreSQL binaries (initdb, postgres) as
// a child process: the database of a service_db env instance.
//
// PostgreSQL refuses to run as root, so when this process is root the
// data folder is handed to the "postgres" user and both binaries run as
// that user (the user Debian's postgresql package creates; a FROM scratch
// image carries it in its /etc/passwd). The data folder defaults to a
// fresh folder under the system temp folder, because a root-owned parent
// such as /root is not traversable by that user; Stop removes it.
//
// The server is throwaway state for one env instance: fsync and
// synchronous commit are off, and local and loopback connections are
// trusted (no password exists that could leak into a record or a log).
//
//	s, err := pgserver.Start(ctx, &pgserver.Options{Port: 5432})
//	...
//	defer s.Stop(context.Background())
//	url := s.URL() // postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
package pgserver
