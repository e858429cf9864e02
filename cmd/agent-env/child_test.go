package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// child is a real agent-env process whose stdout is watched line by line.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    strings.Builder
	stderr strings.Builder
	lines  chan string   // a tick per stdout line, for waiters; dropped when nobody waits
	read   chan struct{} // closed once stdout is read to its end
}

// startCLI starts bin with args in the environment newCLI set up.
func startCLI(t *testing.T, bin string, args ...string) *child {
	t.Helper()
	c := &child{t: t, cmd: exec.Command(bin, args...), lines: make(chan string, 64), read: make(chan struct{})}
	c.cmd.Env = os.Environ() // HOME, XDG_STATE_HOME, AGENT_ENV_* set by newCLI
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = &syncWriter{mu: &c.mu, b: &c.stderr}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.cmd.Process.Kill(); <-c.read; _ = c.cmd.Wait() })
	go func() {
		defer close(c.read)
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.mu.Lock()
			c.out.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
			select {
			case c.lines <- sc.Text():
			default: // nobody waits for lines now
			}
		}
	}()
	return c
}

type syncWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// stdout is what the process printed on stdout so far.
func (c *child) stdout() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// output is stdout then stderr, for failure messages.
func (c *child) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String() + c.stderr.String()
}

// waitLine blocks until stdout has a line containing sub (120 s at most).
func (c *child) waitLine(sub string) {
	c.t.Helper()
	c.waitUntil("a line with "+sub, func(out string) bool { return strings.Contains(out, sub) })
}

// waitUntil blocks until done holds for stdout so far (120 s at most). It
// looks again at each new line and every 100 ms, for conditions that also
// look outside the process (its children in /proc, say).
func (c *child) waitUntil(what string, done func(stdout string) bool) {
	c.t.Helper()
	deadline := time.NewTimer(120 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !done(c.stdout()) {
		select {
		case _, ok := <-c.lines:
			if !ok && !done(c.stdout()) {
				c.t.Fatalf("agent-env ended before %s:\n%s", what, c.output())
			}
		case <-tick.C:
		case <-deadline.C:
			c.t.Fatalf("agent-env never reached %s:\n%s", what, c.output())
		}
	}
}

// exitCode waits for the process (120 s at most) and returns its code.
// stdout is read to its end first, so stdout() then holds all of it.
func (c *child) exitCode() int {
	c.t.Helper()
	done := make(chan error, 1)
	go func() { <-c.read; done <- c.cmd.Wait() }()
	deadline := time.NewTimer(120 * time.Second)
	defer deadline.Stop()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			c.t.Fatal(err)
		}
		return 0
	case <-deadline.C:
		_ = c.cmd.Process.Kill()
		c.t.Fatalf("agent-env did not exit:\n%s", c.output())
		return -1
	}
}
