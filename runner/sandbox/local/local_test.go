package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/local"
	"github.com/agentenv/agentenv/runner/sandboxtest"
)

func TestConformance(t *testing.T) {
	sandboxtest.RunWith(t, func(t *testing.T) sandbox.Provider {
		return local.New(t.TempDir(), &local.Options{TempDir: t.TempDir()})
	}, &sandboxtest.Options{Leftovers: leftovers})
}

func leftovers(t *testing.T, sb sandbox.Sandbox, pid string) []string {
	var left []string
	if _, err := os.Lstat(sb.(*local.Sandbox).Dir()); err == nil {
		left = append(left, "work folder "+sb.(*local.Sandbox).Dir())
	}
	if n, err := strconv.Atoi(pid); err == nil && processAlive(n) {
		left = append(left, "process "+pid)
	}
	return left
}

// processAlive reports a live, non-zombie process.
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) < 3 || f[2] != "Z"
}

func TestWorkFolderLayout(t *testing.T) {
	root := t.TempDir()
	p := local.New(root, nil)
	ctx := context.Background()
	sb, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeVM, ExposedPorts: []int{8000}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Terminate(ctx)
	ls := sb.(*local.Sandbox)
	if !strings.HasPrefix(sb.ID(), "local-") || len(sb.ID()) != len("local-")+8 {
		t.Errorf("id %q, want local-<8 hex>", sb.ID())
	}
	if filepath.Dir(ls.Dir()) != root || !strings.HasPrefix(filepath.Base(ls.Dir()), "agent-env-"+sb.ID()+"-") {
		t.Errorf("work folder %q", ls.Dir())
	}
	if _, err := os.Stat(filepath.Join(ls.Dir(), ".port-map.json")); err != nil {
		t.Errorf(".port-map.json: %v", err)
	}
	if u := sb.TunnelURLs()[8000]; !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Errorf("tunnel url %q", u)
	}
	res, err := sb.Exec(ctx, []string{"sudo", "sh", "-c", "sudo echo $AGENTENV_SANDBOX; echo /app/x /apple; cd /app && pwd"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := sb.ID() + "\n" + ls.Dir() + "/x /apple\n" + ls.Dir() + "\n"
	if string(res.Stdout) != want {
		t.Errorf("stdout %q, want %q (stderr %q)", res.Stdout, want, res.Stderr)
	}
	res, _ = sb.Exec(ctx, []string{"echo", "/app/y", "/apps"}, nil)
	if string(res.Stdout) != ls.Dir()+"/y /apps\n" {
		t.Errorf("argument rewrite: %q", res.Stdout)
	}
	// Paths cannot escape the work folder.
	if err := sb.WriteFile(ctx, "/app/../../escape", strings.NewReader("x"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "escape")); err == nil {
		t.Error("a write escaped the work folder")
	}
}

func TestTerminateRefusesSymlink(t *testing.T) {
	root := t.TempDir()
	p := local.New(root, nil)
	ctx := context.Background()
	sb, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeVM})
	if err != nil {
		t.Fatal(err)
	}
	dir := sb.(*local.Sandbox).Dir()
	target := t.TempDir()
	keep := filepath.Join(target, "keep")
	if err := os.WriteFile(keep, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
	if err := sb.Terminate(ctx); err == nil {
		t.Error("Terminate deleted through a symlink without complaint")
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("symlink target content removed: %v", err)
	}
	_ = os.Remove(dir)
}

func TestReap(t *testing.T) {
	root := t.TempDir()
	p := local.New(root, nil)
	ctx := context.Background()
	old, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeVM, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeVM, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Terminate(ctx)
	reaped, err := p.Reap(ctx, time.Now().Add(10*time.Minute))
	if err != nil || len(reaped) != 1 || reaped[0] != old.ID() {
		t.Fatalf("Reap = %v, %v", reaped, err)
	}
	if _, err := os.Stat(old.(*local.Sandbox).Dir()); err == nil {
		t.Error("expired folder kept")
	}
	if _, err := os.Stat(fresh.(*local.Sandbox).Dir()); err != nil {
		t.Errorf("live folder removed: %v", err)
	}
}

// A creator killed half-way leaves only a hidden staging folder, never a
// work folder without state; Reap removes staging folders once they are
// clearly abandoned and leaves one being filled alone.
func TestReapStaging(t *testing.T) {
	root := t.TempDir()
	p := local.New(root, nil)
	ctx := context.Background()
	sb, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeVM})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Terminate(ctx)
	stale, fresh := filepath.Join(root, ".agent-env-staging-1"), filepath.Join(root, ".agent-env-staging-2")
	for _, d := range []string{stale, fresh} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	if reaped, err := p.Reap(ctx, time.Now()); err != nil || len(reaped) != 0 {
		t.Fatalf("Reap = %v, %v; want nothing", reaped, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("abandoned staging folder kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("staging folder being filled removed: %v", err)
	}
	entries, _ := os.ReadDir(root)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 { // the sandbox's folder and the fresh staging folder
		t.Errorf("root holds %v", names)
	}
}
