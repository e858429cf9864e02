package pgserver_test

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/internal/pgserver"
	"github.com/agentenv/agentenv/internal/pgserver/pgservertest"
)

func TestStartPingStop(t *testing.T) {
	s := pgservertest.Start(t)
	ctx := context.Background()
	if err := pgserver.Ping(ctx, s.Addr()); err != nil {
		t.Fatalf("ping: %v", err)
	}
	s.Stop(ctx)
	<-s.Done()
	if err := pgserver.Ping(ctx, s.Addr()); err == nil {
		t.Fatal("ping after Stop succeeded")
	}
	s.Stop(ctx) // idempotent
}

func TestBadBinDirNamesTheVariable(t *testing.T) {
	t.Setenv(pgserver.EnvBinDir, t.TempDir())
	_, err := pgserver.BinDir()
	if err == nil || !contains(err.Error(), pgserver.EnvBinDir) {
		t.Fatalf("err = %v, want one naming %s", err, pgserver.EnvBinDir)
	}
}

func TestKeepsGivenDataDir(t *testing.T) {
	pgservertest.Need(t)
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		// The postgres user must traverse the parents of the data folder.
		dir = mustTemp(t)
	}
	s, err := pgserver.Start(context.Background(), &pgserver.Options{DataDir: dir + "/data"})
	if err != nil {
		t.Fatal(err)
	}
	s.Stop(context.Background())
	if _, err := os.Stat(dir + "/data/PG_VERSION"); err != nil {
		t.Fatalf("given data folder not kept: %v", err)
	}
}

func mustTemp(t *testing.T) string {
	d, err := os.MkdirTemp("", "pgserver-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestListenBeyondLoopbackTrustsOtherHosts: a server listening on every
// address (a container's) accepts a session arriving at a non-loopback
// address, which initdb's own pg_hba.conf refuses.
func TestListenBeyondLoopbackTrustsOtherHosts(t *testing.T) {
	pgservertest.Need(t)
	ip := nonLoopbackIP(t)
	s, err := pgserver.Start(context.Background(), &pgserver.Options{Listen: "0.0.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	if err := pgserver.Ping(context.Background(), net.JoinHostPort(ip, strconv.Itoa(s.Port()))); err != nil {
		t.Fatalf("session at %s: %v", ip, err)
	}
}

func nonLoopbackIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address on this machine")
	return ""
}
