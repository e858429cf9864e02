package fsobject_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/storetest"
)

func newStore(t *testing.T) *fsobject.Store {
	t.Helper()
	s, err := fsobject.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.RunObjectStore(t, func(t *testing.T) registry.ObjectStore { return newStore(t) })
}

func TestURLIsFileURLOfAbsolutePath(t *testing.T) {
	s := newStore(t)
	info, err := registry.PutBytes(context.Background(), s, "artifacts/file/x/1/x.txt", []byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "file://" + filepath.Join(s.Root(), "artifacts/file/x/1/x.txt")
	if info.URL != want {
		t.Fatalf("URL = %s, want %s", info.URL, want)
	}
	if k, err := s.KeyOf(want); err != nil || k != "artifacts/file/x/1/x.txt" {
		t.Fatalf("KeyOf = %q, %v", k, err)
	}
}

// A symlink planted inside the root cannot carry a key outside it.
func TestSymlinkEscapeRefused(t *testing.T) {
	s := newStore(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(s.Root(), "link")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := registry.PutBytes(ctx, s, "link/new.txt", []byte("x"), nil); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("Put through a symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Fatal("a file was written outside the store")
	}
	if _, _, err := s.Open(ctx, "link/secret.txt"); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("Open through a symlink: %v", err)
	}
}

// A symlink planted on the way to a key, pointing outside the store, is
// refused by name: no directory or file appears outside, nothing outside
// is read, listed or removed. This covers the directories Put would create
// below the link and the metadata sidecar tree.
func TestPlantedSymlinkCreatesNothingOutside(t *testing.T) {
	ctx := context.Background()
	for _, plant := range []string{"artifacts/file", ".agentenv-meta/artifacts/file"} {
		t.Run(plant, func(t *testing.T) {
			s := newStore(t)
			outside := t.TempDir()
			if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o600); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(s.Root(), filepath.FromSlash(plant))
			if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, link); err != nil {
				t.Fatal(err)
			}
			key := "artifacts/file/x/put-1/deep/new.json"
			_, err := registry.PutBytes(ctx, s, key, []byte("x"), &registry.ObjectPutOptions{ContentType: "application/json"})
			if !errors.Is(err, registry.ErrInvalid) || !strings.Contains(err.Error(), plant) || !strings.Contains(err.Error(), "symlink") {
				t.Fatalf("Put through a planted symlink: %v (want ErrInvalid naming %s)", err, plant)
			}
			entries, _ := os.ReadDir(outside)
			if len(entries) != 1 {
				t.Fatalf("the store created %d entries outside itself", len(entries)-1)
			}
			if plant != "artifacts/file" {
				return
			}
			if _, _, err := s.Open(ctx, "artifacts/file/secret.txt"); !errors.Is(err, registry.ErrInvalid) {
				t.Errorf("Open through a planted symlink: %v", err)
			}
			if _, err := s.Stat(ctx, "artifacts/file/secret.txt"); !errors.Is(err, registry.ErrInvalid) {
				t.Errorf("Stat through a planted symlink: %v", err)
			}
			if err := s.Delete(ctx, "artifacts/file/secret.txt"); !errors.Is(err, registry.ErrInvalid) {
				t.Errorf("Delete through a planted symlink: %v", err)
			}
			if _, err := s.List(ctx, "artifacts/file/"); !errors.Is(err, registry.ErrInvalid) {
				t.Errorf("List through a planted symlink: %v", err)
			}
			if b, err := os.ReadFile(filepath.Join(outside, "secret.txt")); err != nil || string(b) != "outside" {
				t.Errorf("the file outside was touched: %q, %v", b, err)
			}
		})
	}
}

const crashEnv = "AGENTENV_FSOBJECT_CRASH_ROOT"

// blockingReader yields 1 MiB, then announces it on stdout and blocks
// until the process is killed.
type blockingReader struct{ sent int }

func (b *blockingReader) Read(p []byte) (int, error) {
	if b.sent >= 1<<20 {
		os.Stdout.WriteString("WRITING\n")
		select {} // the parent kills us here
	}
	n := min(len(p), 1<<20-b.sent)
	for i := range p[:n] {
		p[i] = 'q'
	}
	b.sent += n
	return n, nil
}

// TestCrashHelper is the child process of TestCrashMidWrite.
func TestCrashHelper(t *testing.T) {
	root := os.Getenv(crashEnv)
	if root == "" {
		t.Skip("helper process only")
	}
	s, err := fsobject.New(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = s.Put(context.Background(), "artifacts/file/crash/1/big.bin", &blockingReader{}, nil)
	t.Fatal("unreachable: the put should block until killed")
}

// A writer killed mid-write leaves no visible object, and the key stays free.
func TestCrashMidWrite(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+root)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "WRITING") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child did not start writing: %q, %v", line, err)
	}
	// The child has 1 MiB in its temporary file: kill it there.
	tmps, _ := os.ReadDir(filepath.Join(root, ".agentenv-tmp"))
	if len(tmps) == 0 {
		t.Fatal("no temporary file while writing: the test would not exercise a crash mid-write")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, out)
	_ = cmd.Wait()

	s, err := fsobject.New(root, &fsobject.Options{StaleTemp: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	key := "artifacts/file/crash/1/big.bin"
	if ok, err := s.Exists(ctx, key); ok || err != nil {
		t.Fatalf("partial object visible after the crash: %v, %v", ok, err)
	}
	if infos, err := s.List(ctx, ""); err != nil || len(infos) != 0 {
		t.Fatalf("List after the crash = %v, %v", infos, err)
	}
	if tmps, _ := os.ReadDir(filepath.Join(root, ".agentenv-tmp")); len(tmps) != 0 {
		t.Fatalf("stale temporary files not swept: %d", len(tmps))
	}
	if _, err := registry.PutBytes(ctx, s, key, []byte("whole"), nil); err != nil {
		t.Fatalf("put after the crash: %v", err)
	}
}

func BenchmarkFS(b *testing.B) {
	s, err := fsobject.New(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	storetest.BenchmarkObjects(b, s)
}
