package temporaltest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// EnvDevServer names the variable holding the dev server binary's path.
const EnvDevServer = "AGENTENV_TEMPORAL_DEVSERVER"

// Server is a running dev server.
type Server struct {
	// Address is the frontend's 127.0.0.1:PORT.
	Address string
	// Namespace is the server's default namespace.
	Namespace string
	// PID is the server process's id.
	PID int
}

// StartServer starts the dev server on a free loopback port and stops it
// (by its pid) when the test ends. Without EnvDevServer the test is
// skipped, or failed under CI=true where the tier must run.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin := os.Getenv(EnvDevServer)
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is unset: build the dev server with integration/temporal/build-devserver.sh", EnvDevServer)
		}
		t.Skipf("%s is unset: build the dev server with integration/temporal/build-devserver.sh", EnvDevServer)
	}
	cmd := exec.Command(bin)
	cmd.Stderr = nil // the server's logs are noise unless it fails to start
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the Temporal dev server %s: %v", bin, err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	line := make(chan []byte, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- append([]byte(nil), sc.Bytes()...)
		}
		close(line)
		for sc.Scan() { // drain, so the server never blocks on a full pipe
		}
		_ = cmd.Wait()
		close(exited)
	}()
	var first []byte
	select {
	case first = <-line:
	case <-time.After(2 * time.Minute):
		t.Fatal("the Temporal dev server did not print its address within 2 minutes")
	}
	var hello struct{ Address, Namespace string }
	if err := json.Unmarshal(first, &hello); err != nil || hello.Address == "" {
		t.Fatalf("the Temporal dev server printed %q, want {\"address\":...}: %v", first, err)
	}
	return &Server{Address: hello.Address, Namespace: hello.Namespace, PID: cmd.Process.Pid}
}

// String names the server in test logs.
func (s *Server) String() string { return fmt.Sprintf("%s (pid %d)", s.Address, s.PID) }
