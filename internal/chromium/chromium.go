// Package chromium finds and starts Debian's headless Chromium with the
// DevTools protocol on a loopback port. The website-browser env runs it on
// the process provider, and tests use it as the browser behind the
// gateway's computer-use tools.
//
//	p, err := chromium.Start(ctx, &chromium.Options{UserDataDir: dir})
//	defer p.Stop()
//	p.DevToolsURL // ws://127.0.0.1:PORT/devtools/browser/...
package chromium

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNotInstalled is returned by Path when no Chromium binary is found.
var ErrNotInstalled = errors.New("chromium is not installed (apt-get install -y chromium)")

// Names are the binary names Path tries, in order.
var Names = []string{"chromium", "chromium-browser", "google-chrome"}

// EnvBinary names the environment variable that, when set, is the
// Chromium binary Path returns: a FROM scratch image has no PATH and no
// shell for Debian's /usr/bin/chromium wrapper, so it names the real
// program (Program).
const EnvBinary = "AGENTENV_CHROMIUM"

// Path returns the Chromium binary: $AGENTENV_CHROMIUM, else the first
// of Names on PATH.
func Path() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	for _, n := range Names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", ErrNotInstalled
}

// Options tune Start. A nil *Options takes every default.
type Options struct {
	// Binary is the Chromium binary; Path() when empty.
	Binary string
	// UserDataDir is the profile folder; required, since two browsers
	// cannot share one.
	UserDataDir string
	// Address and Port are where DevTools listens; 127.0.0.1 and a free
	// port (0) when zero.
	Address string
	Port    int
	// Width and Height are the window size; 1280×800 when zero.
	Width, Height int
	// StartTimeout bounds the wait for DevTools; 30 s when zero.
	StartTimeout time.Duration
}

// Args are the command-line flags of a headless DevTools browser.
func Args(o Options) []string {
	if o.Address == "" {
		o.Address = "127.0.0.1"
	}
	if o.Width <= 0 || o.Height <= 0 {
		o.Width, o.Height = 1280, 800
	}
	return []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions",
		"--disable-background-networking", "--disable-smooth-scrolling", "--disable-sync", "--hide-scrollbars", "--mute-audio",
		"--remote-debugging-address=" + o.Address, "--remote-debugging-port=" + strconv.Itoa(o.Port),
		"--user-data-dir=" + o.UserDataDir,
		fmt.Sprintf("--window-size=%d,%d", o.Width, o.Height),
		"about:blank",
	}
}

// Process is a running browser.
type Process struct {
	cmd *exec.Cmd
	// DevToolsURL is the browser's ws:// DevTools endpoint.
	DevToolsURL string
	done        chan struct{}
}

// Start runs Chromium and waits until DevTools listens. The browser is in
// its own process group, so Stop ends its helper processes too.
func Start(ctx context.Context, o *Options) (*Process, error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.UserDataDir == "" {
		return nil, errors.New("chromium: UserDataDir is required")
	}
	if opt.Binary == "" {
		p, err := Path()
		if err != nil {
			return nil, err
		}
		opt.Binary = p
	}
	if opt.StartTimeout <= 0 {
		opt.StartTimeout = 30 * time.Second
	}
	cmd := exec.Command(opt.Binary, Args(opt)...)
	// Its own group, so Stop ends the helper processes too; and killed
	// with its parent, so a crashed owner leaves no browser behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("chromium: %w", err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var tail []string
		for sc.Scan() {
			line := sc.Text()
			if u, ok := strings.CutPrefix(line, "DevTools listening on "); ok {
				select {
				case found <- strings.TrimSpace(u):
				default:
				}
			}
			if len(tail) < 20 {
				tail = append(tail, line)
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t := time.NewTimer(opt.StartTimeout)
	defer t.Stop()
	select {
	case u := <-found:
		p.DevToolsURL = u
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("chromium exited before DevTools listened (%s)", opt.Binary)
	case <-t.C:
		p.Stop()
		return nil, fmt.Errorf("chromium: DevTools did not listen within %s", opt.StartTimeout)
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
}

// Stop kills the browser's process group and waits for it. Idempotent.
func (p *Process) Stop() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

// Pid is the browser's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Wait blocks until the browser exits.
func (p *Process) Wait() { <-p.done }
