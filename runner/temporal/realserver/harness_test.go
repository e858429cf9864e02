package realserver

import (
	"bufio"
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

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/temporal/temporaltest"
)

var (
	buildOnce sync.Once
	cliPath   string
	buildErr  error
	buildOut  []byte
)

// agentEnv builds the agent-env command once per test binary (without
// -race: the tier tests the processes' behaviour, and a race build of the
// command would double the tier's time).
func agentEnv(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentenv-realserver-")
		if err != nil {
			buildErr = err
			return
		}
		cliPath = filepath.Join(dir, "agent-env")
		buildOut, buildErr = exec.Command("go", "build", "-o", cliPath, "github.com/agentenv/agentenv/cmd/agent-env").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("build agent-env: %v\n%s", buildErr, buildOut)
	}
	return cliPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cliPath != "" {
		_ = os.RemoveAll(filepath.Dir(cliPath))
	}
	os.Exit(code)
}

// cluster is one dev server, a config naming it, and a state folder,
// sandbox folder and home that every agent-env process of the test
// shares (as machines share PostgreSQL and S3 in production).
type cluster struct {
	t          *testing.T
	bin        string
	srv        *temporaltest.Server
	dir        string
	sandboxDir string
	env        []string
}

func newCluster(t *testing.T) *cluster {
	srv := temporaltest.StartServer(t)
	c := &cluster{t: t, bin: agentEnv(t), srv: srv, dir: t.TempDir()}
	c.sandboxDir = filepath.Join(c.dir, "sandboxes")
	home := filepath.Join(c.dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(c.dir, "config.toml")
	// A short heartbeat timeout: a killed worker's steps move on in
	// seconds rather than the default 30.
	if err := os.WriteFile(cfg, []byte(`[runner]
impl = "temporal"
[runner.temporal]
address = "`+srv.Address+`"
namespace = "`+srv.Namespace+`"
task_queue = "tier-`+runner.RandomHex(4)+`"
heartbeat_timeout_seconds = 3
`), 0o644); err != nil {
		t.Fatal(err)
	}
	c.env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(c.dir, "state"),
		"AGENT_ENV_LOCAL_SANDBOX_DIR="+c.sandboxDir, "AGENT_ENV_CONFIG="+cfg, "AGENT_ENV_RUNNER=")
	return c
}

// run runs agent-env to its end; extra env entries override.
func (c *cluster) run(ctx context.Context, extraEnv []string, args ...string) (string, error) {
	c.t.Helper()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = append(append([]string(nil), c.env...), extraEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustRun runs agent-env and fails the test when it fails.
func (c *cluster) mustRun(ctx context.Context, extraEnv []string, args ...string) string {
	c.t.Helper()
	out, err := c.run(ctx, extraEnv, args...)
	if err != nil {
		c.t.Fatalf("agent-env %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// worker is one `agent-env worker` process, in a process group of its
// own so that the test's end leaves none of its children.
type worker struct {
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// startWorker starts a worker and waits until it serves.
func (c *cluster) startWorker(name string, maxSteps int) *worker {
	c.t.Helper()
	logPath := filepath.Join(c.dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		c.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(c.bin, "worker", "--max-concurrent-steps", itoa(maxSteps))
	cmd.Env = c.env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	w := &worker{cmd: cmd, exited: make(chan struct{}), log: logPath}
	go func() { _ = cmd.Wait(); close(w.exited) }()
	c.t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-w.exited:
		case <-time.After(45 * time.Second):
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what the worker left, if anything
	})
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "Worker serving") {
			return w
		}
		select {
		case <-w.exited:
			b, _ := os.ReadFile(logPath)
			c.t.Fatalf("worker %s exited:\n%s", name, b)
		case <-time.After(100 * time.Millisecond):
		}
	}
	c.t.Fatalf("worker %s did not start within a minute", name)
	return nil
}

// kill9 kills the worker process alone, as a crash would.
func (w *worker) kill9(t *testing.T) {
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-w.exited
}

// sandboxes lists the local provider's sandbox folders.
func (c *cluster) sandboxes() []string {
	entries, _ := os.ReadDir(c.sandboxDir)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// waitSandboxes waits until at least n sandbox folders exist.
func (c *cluster) waitSandboxes(n int, within time.Duration) {
	c.t.Helper()
	if !pollUntil(within, func() bool { return len(c.sandboxes()) >= n }) {
		c.t.Fatalf("%d sandboxes after %s, want %d", len(c.sandboxes()), within, n)
	}
}

// waitNoSandboxes waits until every sandbox folder is gone.
func (c *cluster) waitNoSandboxes(within time.Duration) {
	c.t.Helper()
	if !pollUntil(within, func() bool { return len(c.sandboxes()) == 0 }) {
		c.t.Fatalf("sandboxes leaked: %v", c.sandboxes())
	}
}

// pollUntil checks cond every 50 ms until it holds (true) or within
// passes (false). The sandbox folders have no event to wait on.
func pollUntil(within time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
	return true
}

// submittedIDs reads the run ids `task run --detach` printed.
func submittedIDs(out string) []string {
	var ids []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		_, rest, ok := strings.Cut(sc.Text(), "Submitted run: ")
		if !ok {
			continue
		}
		id, _, _ := strings.Cut(rest, " ")
		ids = append(ids, id)
	}
	return ids
}

// waitStatus polls `task status ID` until it reports one of want.
func (c *cluster) waitStatus(ctx context.Context, id string, want ...string) string {
	c.t.Helper()
	for {
		out, _ := c.run(ctx, nil, "task", "status", id)
		for _, w := range want {
			if strings.Contains(out, "Status: "+w+"\n") {
				return out
			}
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("run %s: no status %v in time; last:\n%s", id, want, out)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
