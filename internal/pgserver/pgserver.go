package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvBinDir names the variable that overrides the folder of initdb and
// postgres.
const EnvBinDir = "AGENTENV_PG_BIN"

// ErrNoBinaries is returned when no PostgreSQL binaries are found.
var ErrNoBinaries = errors.New("PostgreSQL binaries not found")

// Options configure Start. A nil *Options is the zero value.
type Options struct {
	// BinDir holds initdb and postgres; "" = $AGENTENV_PG_BIN, else the
	// newest /usr/lib/postgresql/<v>/bin.
	BinDir string
	// DataDir is the cluster folder, initialised when empty; "" = a fresh
	// temp folder that Stop removes.
	DataDir string
	// Listen is the TCP address to listen on; "" = 127.0.0.1.
	Listen string
	// Port is the TCP port; 0 = a free loopback port.
	Port int
	// ReadyTimeout bounds the wait for the first accepted connection;
	// 0 = 60 s.
	ReadyTimeout time.Duration
	// Log receives initdb's and postgres's output; nil = discarded.
	Log *os.File
}

// Server is a running PostgreSQL.
type Server struct {
	port    int
	host    string
	dataDir string
	ownData bool
	cmd     *exec.Cmd
	done    chan struct{}
	stop    sync.Once
}

// BinDir finds the PostgreSQL binaries: $AGENTENV_PG_BIN, else the newest
// /usr/lib/postgresql/<version>/bin holding initdb.
func BinDir() (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("%w: %s=%s: %v", ErrNoBinaries, EnvBinDir, d, err)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(dirs) == 0 {
		return "", fmt.Errorf("%w: no /usr/lib/postgresql/<version>/bin/initdb (install Debian's postgresql package, or set %s)", ErrNoBinaries, EnvBinDir)
	}
	// Newest version first: compare the version folder numerically.
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	return filepath.Dir(dirs[0]), nil
}

func version(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// Start initialises the data folder when it is empty and starts postgres,
// returning once it accepts connections. On failure nothing is left
// running and a folder it created is removed.
func Start(ctx context.Context, o *Options) (s *Server, err error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.BinDir == "" {
		if opts.BinDir, err = BinDir(); err != nil {
			return nil, err
		}
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1"
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 60 * time.Second
	}
	if opts.Port == 0 {
		if opts.Port, err = freePort(); err != nil {
			return nil, err
		}
	}
	cred, uid, gid, err := runAs()
	if err != nil {
		return nil, err
	}
	s = &Server{port: opts.Port, host: opts.Listen, dataDir: opts.DataDir, done: make(chan struct{})}
	if s.dataDir == "" {
		if s.dataDir, err = os.MkdirTemp("", "agentenv-pg-"); err != nil {
			return nil, fmt.Errorf("pgserver: %w", err)
		}
		s.ownData = true
	}
	defer func() {
		if err != nil && s.ownData {
			_ = os.RemoveAll(s.dataDir)
		}
	}()
	if err := os.MkdirAll(s.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("pgserver: data folder: %w", err)
	}
	if cred != nil {
		if err := os.Chown(s.dataDir, uid, gid); err != nil {
			return nil, fmt.Errorf("pgserver: hand the data folder to the postgres user: %w", err)
		}
	}
	if err := initdb(ctx, opts.BinDir, s.dataDir, opts.Listen, cred); err != nil {
		return nil, err
	}
	// The socket goes into the data folder: /var/run/postgresql may not
	// exist (a scratch image) or not be writable.
	s.cmd = exec.Command(filepath.Join(opts.BinDir, "postgres"), "-D", s.dataDir, "-h", opts.Listen,
		"-p", strconv.Itoa(opts.Port), "-k", s.dataDir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if opts.Log != nil {
		s.cmd.Stdout, s.cmd.Stderr = opts.Log, opts.Log
	}
	var tail bytes.Buffer
	if opts.Log == nil {
		s.cmd.Stdout, s.cmd.Stderr = &tail, &tail
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgserver: start postgres: %w", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	if err := s.waitReady(ctx, opts.ReadyTimeout); err != nil {
		s.Stop(context.WithoutCancel(ctx))
		if tail.Len() > 0 {
			return nil, fmt.Errorf("%w; postgres said: %s", err, lastLines(tail.String(), 5))
		}
		return nil, err
	}
	return s, nil
}

// initdb creates the cluster unless dir already holds one. initdb's
// pg_hba.conf trusts only the socket and loopback, so a server listening
// on another address (a container's, reached through its group network
// or a published port) would refuse every session: for one, the new
// cluster also trusts TCP sessions from any address.
func initdb(ctx context.Context, bin, dir, listen string, cred *syscall.Credential) error {
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err == nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", dir, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgserver: initdb: %w: %s", err, lastLines(string(out), 5))
	}
	if ip := net.ParseIP(listen); ip != nil && ip.IsLoopback() || listen == "localhost" {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgserver: pg_hba.conf: %w", err)
	}
	_, err = f.WriteString("\n# agentenv: the server listens beyond loopback (" + listen + ")\nhost all all 0.0.0.0/0 trust\nhost all all ::/0 trust\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pgserver: pg_hba.conf: %w", err)
	}
	return nil
}

// runAs is the credential of the postgres user when this process is root
// (PostgreSQL refuses root), else nil: run as ourselves.
func runAs() (*syscall.Credential, int, int, error) {
	if os.Geteuid() != 0 {
		return nil, -1, -1, nil
	}
	_, uid, gid, err := runAsLookup()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("pgserver: running as root, and PostgreSQL refuses root: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid, gid, nil
}

// runAsLookup finds the postgres user.
func runAsLookup() (*user.User, int, int, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, 0, 0, fmt.Errorf("need a postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return u, uid, gid, nil
}

// waitReady waits until postgres accepts TCP connections and answers the
// startup handshake (a bare accept can precede recovery's end).
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 10 * time.Millisecond
	for {
		if err := Ping(ctx, s.Addr()); err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("pgserver: postgres exited before accepting connections")
		case <-ctx.Done():
			return fmt.Errorf("pgserver: postgres not ready on %s after %s: %w", s.Addr(), timeout, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

// Port is the TCP port.
func (s *Server) Port() int { return s.port }

// URL is the connection URL of the postgres database as the postgres user.
func (s *Server) URL() string { return URL(s.Addr()) }

// URL is the connection URL of the postgres database at host:port.
func URL(addr string) string {
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable"
}

// Done is closed when postgres has exited.
func (s *Server) Done() <-chan struct{} { return s.done }

// Stop asks postgres for a fast shutdown (SIGINT: abort sessions, then
// checkpoint), kills it if ctx ends first, and removes a data folder it
// created; idempotent.
func (s *Server) Stop(ctx context.Context) {
	s.stop.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			_ = s.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-s.done:
			case <-ctx.Done():
				_ = s.cmd.Process.Kill()
				<-s.done
			}
		}
		if s.ownData {
			_ = os.RemoveAll(s.dataDir)
		}
	})
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgserver: allocate a port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}
