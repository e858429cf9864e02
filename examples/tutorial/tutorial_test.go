// Package tutorial_test walks docs/tutorial.md for real: every code block
// of the doc is a file under examples/tutorial (checked byte for byte),
// and the files are built and run in the doc's order: install the CLI and
// the gateway, serve the notes env behind a gateway and talk to it with
// curl, register the env and the agent, and run the bundle on the process
// sandbox. Nothing needs Docker.
package tutorial_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// include marks a code block of the doc as a copy of a file:
// <!-- include: examples/tutorial/notes/notes.go -->, then the block.
var include = regexp.MustCompile("(?s)<!-- include: (\\S+) -->\n```[a-z]*\n(.*?)```\n")

// fence matches every fenced code block of the doc.
var fence = regexp.MustCompile("(?m)^```")

func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTutorialBlocksAreTheFiles fails when a code block of docs/tutorial.md
// is not an include of a file under examples/tutorial, or differs from it.
func TestTutorialBlocksAreTheFiles(t *testing.T) {
	r := root(t)
	doc, err := os.ReadFile(filepath.Join(r, "docs", "tutorial.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := include.FindAllSubmatch(doc, -1)
	if n := len(fence.FindAll(doc, -1)) / 2; n != len(blocks) {
		t.Errorf("docs/tutorial.md has %d code blocks but %d includes: every block is a file under examples/tutorial, preceded by <!-- include: PATH -->", n, len(blocks))
	}
	seen := map[string]bool{}
	for _, b := range blocks {
		path, body := string(b[1]), b[2]
		seen[path] = true
		if !strings.HasPrefix(path, "examples/tutorial/") {
			t.Errorf("include %s: not under examples/tutorial", path)
			continue
		}
		want, err := os.ReadFile(filepath.Join(r, path))
		if err != nil {
			t.Errorf("include %s: %v", path, err)
			continue
		}
		if !bytes.Equal(body, want) {
			t.Errorf("docs/tutorial.md's copy of %s differs from the file; paste the file again", path)
		}
	}
	for _, f := range []string{"notes/go.mod", "notes/notes.go", "notes/cmd/notes-env/main.go", "notes/cmd/notes-agent/main.go",
		"bundle/tasks/remember.json", "install.sh", "serve.sh", "curl.sh", "curl.out", "register.sh", "run.sh"} {
		if !seen["examples/tutorial/"+f] {
			t.Errorf("docs/tutorial.md does not show examples/tutorial/%s", f)
		}
	}
}

// TestTutorialEndToEnd runs the tutorial's scripts in order.
func TestTutorialEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI, the gateway, the env and the agent")
	}
	r := root(t)
	tut := filepath.Join(r, "examples", "tutorial")
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	env := append(os.Environ(),
		"GOBIN="+bin, "GOFLAGS=-mod=mod",
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"XDG_STATE_HOME="+filepath.Join(tmp, "state"),
		"AGENT_ENV_LOCAL_SANDBOX_DIR="+filepath.Join(tmp, "sandboxes"),
		"AGENT_ENV_CONFIG=",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	script := func(dir, name string, extra ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "sh", filepath.Join(tut, name))
		cmd.Dir, cmd.Env = dir, append(env, extra...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		return string(out)
	}

	script(r, "install.sh")

	// serve.sh runs until interrupted; curl.sh talks to it.
	notesPort, gwPort := freePort(t), freePort(t)
	ports := []string{"NOTES_PORT=" + notesPort, "GW_PORT=" + gwPort}
	serve := exec.Command("sh", filepath.Join(tut, "serve.sh"))
	serve.Dir, serve.Env = filepath.Join(tut, "notes"), append(env, ports...)
	serveOut := &lockedBuffer{}
	serve.Stdout, serve.Stderr = serveOut, serveOut
	serve.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- serve.Wait() }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = syscall.Kill(-serve.Process.Pid, syscall.SIGTERM)
			select {
			case <-stopped:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-serve.Process.Pid, syscall.SIGKILL)
				<-stopped
			}
		})
	}
	defer stop()
	gw := "http://127.0.0.1:" + gwPort
	waitForStep(t, ctx, gw, stopped, serveOut)
	out := script(tut, "curl.sh", "GW="+gw)
	if want, err := os.ReadFile(filepath.Join(tut, "curl.out")); err != nil || out != string(want) {
		t.Errorf("curl.sh printed:\n%s\nwant curl.out:\n%s", out, want)
	}
	stop()

	script(filepath.Join(tut, "notes"), "register.sh")
	out = script(tut, "run.sh")
	if !strings.Contains(out, "tasks/remember.json v1: passed (kept: 1, reply: 1)") || !strings.Contains(out, "Tore down 2 sandboxes.") {
		t.Errorf("run.sh output:\n%s", out)
	}
}

// waitForStep waits until the gateway lists the env's tools on /step (the
// env is compiled by go run first), or serve.sh exits.
func waitForStep(t *testing.T, ctx context.Context, gw string, stopped <-chan error, out *lockedBuffer) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw+"/step", strings.NewReader(`{"action":"list_tools"}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(b.String(), "notes_add") {
				return
			}
		}
		select {
		case err := <-stopped:
			t.Fatalf("serve.sh exited: %v\n%s", err, out)
		case <-ctx.Done():
			t.Fatalf("the gateway never listed the notes tools:\n%s", out)
		case <-tick.C:
		}
	}
}

// lockedBuffer collects a process's output while the test may read it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}
