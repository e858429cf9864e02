// Package pgservertest starts a throwaway PostgreSQL for a test: it skips
// the test with a message when Debian's PostgreSQL binaries are absent,
// except under CI=true (where .ci/run installs them) when it fails.
package pgservertest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/agentenv/agentenv/internal/pgserver"
)

// Need skips t (or fails it under CI=true) when no PostgreSQL binaries
// are installed, and returns their folder.
func Need(t testing.TB) string {
	t.Helper()
	dir, err := pgserver.BinDir()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skipf("skipping: %v (apt-get install -y postgresql)", err)
	}
	return dir
}

// Start starts a server for t and stops it when t ends.
func Start(t testing.TB) *pgserver.Server {
	t.Helper()
	bin := Need(t)
	s, err := pgserver.Start(context.Background(), &pgserver.Options{BinDir: bin})
	if errors.Is(err, pgserver.ErrNoBinaries) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	return s
}
