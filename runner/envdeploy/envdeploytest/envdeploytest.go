// Package envdeploytest is the conformance suite every envdeploy.Backend
// passes (runner/sandbox/docker, runner/sandbox/process), plus the
// fixtures it needs: the static binaries of the echo env, the gateway and
// the scripted agent, built once per test binary, and fresh stores.
//
//	func TestConformance(t *testing.T) {
//		envdeploytest.Run(t, func(t *testing.T) envdeploy.Backend { return process.New(t.TempDir(), nil) }, nil)
//	}
//
// The suite deploys a multi env with two echo servers behind the gateway,
// calls a tool of each through /mcp and /step from the host, deploys the
// scripted agent that reaches the env through the URL the record gives it
// (the network alias on Docker) and calls a tool, tears everything down
// (twice), deploys one echo server alone (the server topology: no gateway,
// the server's card is the env's, an agent reaches it directly), checks
// that nothing carrying the instance labels is left, and
// that bad input (an unknown env, a source the backend cannot run) leaves
// nothing running.
package envdeploytest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/runner/envdeploy"
)

// Binaries are the static binaries of the fixtures.
type Binaries struct {
	Echo, Gateway, Agent string
	// DBEnv and Postgres are a service_db env's db MCP server and
	// database workload (agentenv-postgres).
	DBEnv, Postgres string
	// Crasher exits at once with a message (a server that cannot start).
	Crasher string
	// Email, Webmail and Browser make the browser office (a multi env of
	// the email server, the webmail website and the website-browser);
	// Unready is a website that answers 503 forever.
	Email, Webmail, Browser, Unready string
}

var (
	binOnce sync.Once
	bins    Binaries
	binErr  error
	binDir  string
)

// ModuleRoot is the folder of the agentenv go.mod.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

// Build compiles the fixture binaries once per test binary (CGO_ENABLED=0)
// into a per-user cache folder under the temp dir that every test binary
// shares and that is kept between runs, as Go's build cache is: a later
// run relinks only what changed.
func Build(t testing.TB) Binaries {
	t.Helper()
	binOnce.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			binErr = err
			return
		}
		// One cache folder shared by every test binary: `go build -o`
		// skips the link when the binary there is up to date, so only the
		// first package to test pays for the builds. A file lock keeps
		// concurrent test binaries from building over each other.
		binDir = filepath.Join(os.TempDir(), "agentenv-test-fixtures-"+strconv.Itoa(os.Getuid()))
		if binErr = os.MkdirAll(binDir, 0o700); binErr != nil {
			return
		}
		lock, err := os.OpenFile(filepath.Join(binDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			binErr = err
			return
		}
		defer lock.Close()
		if binErr = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); binErr != nil {
			return
		}
		defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
		ctx := context.Background()
		o := &imagebuild.GoOptions{Dir: root}
		var wg sync.WaitGroup
		var mu sync.Mutex
		build := func(dst *string, pkg string) {
			defer wg.Done()
			p, err := imagebuild.BuildGo(ctx, pkg, binDir, o)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && binErr == nil {
				binErr = err
			}
			*dst = p
		}
		wg.Add(10)
		go build(&bins.Email, "./examples/envs/email/cmd/email-env")
		go build(&bins.Webmail, "./examples/websites/webmail/cmd/webmail")
		go build(&bins.Browser, "./images/browser/agentenv-browser")
		go build(&bins.Unready, "./runner/envdeploy/envdeploytest/unready")
		go build(&bins.DBEnv, "./examples/envs/servicedb/cmd/db-env")
		go build(&bins.Postgres, "./images/postgres/agentenv-postgres")
		go build(&bins.Crasher, "./runner/envdeploy/envdeploytest/crasher")
		go build(&bins.Echo, "./examples/envs/echo/cmd/echo-env")
		go build(&bins.Gateway, "./cmd/agentenv-gateway")
		go build(&bins.Agent, "./examples/agents/scripted")
		wg.Wait()
	})
	if binErr != nil {
		t.Fatalf("envdeploytest: build fixtures: %v", binErr)
	}
	return bins
}

// Cleanup is called from TestMain after m.Run. The fixture binaries are a
// cache shared by test binaries (a few tens of MB under the temp folder),
// so it leaves them; it removes the per-process folders older versions of
// this package made.
func Cleanup() {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), "envdeploytest-bin-*"))
	for _, dir := range old {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "envdeploytest-bin-"))
		if err == nil && !envdeploy.OwnerAlive("pid:"+strconv.Itoa(pid)) {
			_ = os.RemoveAll(dir)
		}
	}
}

// Poll waits for cond, checking every 20 ms, and fails the test after 60 s.
func Poll(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatal("condition not met within 60s")
		case <-tick.C:
		}
	}
}
