package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/local"
)

const hostSecret = "HOST-SECRET"

// newCopyOutBox is a local sandbox with /app/out/ok.txt, and a host folder
// outside its work folder holding secret.txt.
func newCopyOutBox(t *testing.T) (sb *local.Sandbox, out, outside string) {
	t.Helper()
	p := local.New(t.TempDir(), &local.Options{TempDir: t.TempDir()})
	s, err := p.CreateSandbox(context.Background(), sandbox.Spec{Mode: sandbox.ModeVM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Terminate(context.Background()) })
	sb = s.(*local.Sandbox)
	out = filepath.Join(sb.Dir(), "out")
	outside = t.TempDir()
	for p, c := range map[string]string{filepath.Join(out, "ok.txt"): "fine", filepath.Join(outside, "secret.txt"): hostSecret} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sb, out, outside
}

func copyAll(sb sandbox.Sandbox, root string, o *sandbox.CopyOutOptions) (map[string]string, error) {
	got := map[string]string{}
	err := sb.CopyOut(context.Background(), root, o, func(f sandbox.File) error {
		got[f.Path] = string(f.Data)
		return nil
	})
	return got, err
}

// Links to host files and folders outside the work folder, by their host
// paths, are refused by name; the host file's content is never read.
func TestCopyOutRefusesHostFiles(t *testing.T) {
	for _, c := range []struct{ name, target string }{
		{"file", "secret.txt"},
		{"folder", "."},
		{"passwd", "/etc/passwd"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sb, out, outside := newCopyOutBox(t)
			target := c.target
			if !filepath.IsAbs(target) {
				target = filepath.Join(outside, target)
			}
			if err := os.Symlink(target, filepath.Join(out, "x")); err != nil {
				t.Fatal(err)
			}
			for _, o := range []*sandbox.CopyOutOptions{nil, {Paths: []string{"x"}}} {
				got, err := copyAll(sb, "/app/out", o)
				var le *sandbox.LinkError
				if !errors.Is(err, sandbox.ErrLinkOutside) || !errors.As(err, &le) || le.Target != target ||
					!strings.Contains(err.Error(), "/app/out/x -> "+target) {
					t.Errorf("CopyOut: %v, want a LinkError naming /app/out/x -> %s", err, target)
				}
				for p, v := range got {
					if strings.Contains(v, hostSecret) || strings.Contains(v, "root:") {
						t.Errorf("host content handed over as %s", p)
					}
				}
			}
		})
	}
}

// A link by its absolute host path to a file inside the copied folder is
// followed.
func TestCopyOutAbsoluteHostLinkInside(t *testing.T) {
	sb, out, _ := newCopyOutBox(t)
	if err := os.Symlink(filepath.Join(out, "ok.txt"), filepath.Join(out, "abs")); err != nil {
		t.Fatal(err)
	}
	got, err := copyAll(sb, "/app/out", nil)
	if err != nil || got["abs"] != "fine" || got["ok.txt"] != "fine" || len(got) != 2 {
		t.Errorf("CopyOut = %v, %v", got, err)
	}
}

// A copied folder that is itself a link out of the work folder is refused,
// naming the link and where it points; one to a folder inside is followed.
func TestCopyOutRootLink(t *testing.T) {
	sb, out, outside := newCopyOutBox(t)
	if err := os.Symlink(outside, filepath.Join(sb.Dir(), "away")); err != nil {
		t.Fatal(err)
	}
	got, err := copyAll(sb, "/app/away", nil)
	if !errors.Is(err, sandbox.ErrLinkOutside) || !strings.Contains(err.Error(), "/app/away") || !strings.Contains(err.Error(), outside) {
		t.Errorf("CopyOut of a folder linked outside: %v, want ErrLinkOutside naming /app/away and %s", err, outside)
	}
	if len(got) != 0 {
		t.Errorf("handed over %v", got)
	}
	if err := os.Symlink("out", filepath.Join(sb.Dir(), "alias")); err != nil {
		t.Fatal(err)
	}
	if got, err := copyAll(sb, "/app/alias", nil); err != nil || got["ok.txt"] != "fine" {
		t.Errorf("CopyOut of a folder linked inside: %v, %v", got, err)
	}
	_ = out
}

// A FIFO is refused by name, and reading it does not wait for a writer.
func TestCopyOutFIFO(t *testing.T) {
	sb, out, _ := newCopyOutBox(t)
	if err := syscall.Mkfifo(filepath.Join(out, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, o := range []*sandbox.CopyOutOptions{nil, {Paths: []string{"pipe"}}} {
		if _, err := copyAll(sb, "/app/out", o); !errors.Is(err, sandbox.ErrNotRegular) || !strings.Contains(err.Error(), "/app/out/pipe") {
			t.Errorf("CopyOut of a FIFO: %v, want ErrNotRegular naming it", err)
		}
	}
}

// An agent swapping a folder for a link out of the work folder while the
// copy runs never gets the outside file copied: the reads go through an
// os.Root, whatever the walk decided before the swap.
func TestCopyOutSwapRace(t *testing.T) {
	sb, out, outside := newCopyOutBox(t)
	d := filepath.Join(out, "d")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "secret.txt"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(out, "d-link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Alternate d between the real folder and the outside link.
		real := filepath.Join(out, "d-real")
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Rename(d, real)
			_ = os.Rename(link, d)
			_ = os.Rename(d, link)
			_ = os.Rename(real, d)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for range 300 {
		got, _ := copyAll(sb, "/app/out", &sandbox.CopyOutOptions{Paths: []string{"d/secret.txt"}})
		if got["d/secret.txt"] == hostSecret {
			t.Fatal("the outside file was copied through a swapped link")
		}
		got, _ = copyAll(sb, "/app/out", nil)
		for p, v := range got {
			if v == hostSecret {
				t.Fatalf("the outside file was copied as %s", p)
			}
		}
	}
}

// ReadFile keeps to the work folder too: a planted link to a host file is
// refused by name, one to a file of the sandbox is followed.
func TestReadFileRefusesHostFiles(t *testing.T) {
	sb, out, outside := newCopyOutBox(t)
	secretPath := filepath.Join(outside, "secret.txt")
	if err := os.Symlink(secretPath, filepath.Join(out, "x")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../"+filepath.Base(sb.Dir())+"/out/ok.txt", filepath.Join(out, "y")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(out, "ok.txt"), filepath.Join(sb.Dir(), "abs")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := sb.ReadFile(ctx, "/app/out/x")
	if !errors.Is(err, sandbox.ErrLinkOutside) || !strings.Contains(err.Error(), secretPath) || strings.Contains(string(b), hostSecret) {
		t.Errorf("ReadFile through a link to a host file = %q, %v; want ErrLinkOutside naming %s", b, err, secretPath)
	}
	if b, err := sb.ReadFile(ctx, "/app/out/y"); !errors.Is(err, sandbox.ErrLinkOutside) {
		t.Errorf("ReadFile through a link out of the work folder and back = %q, %v; want ErrLinkOutside", b, err)
	}
	if b, err := sb.ReadFile(ctx, "abs"); err != nil || string(b) != "fine" {
		t.Errorf("ReadFile through an absolute link inside = %q, %v", b, err)
	}
}

// WriteFile and Stat keep to the work folder as well: a folder the agent
// turned into a link to a host folder receives nothing, and a probe through
// a link cannot tell whether a host file exists.
func TestWriteFileAndStatRefuseHostLinks(t *testing.T) {
	sb, _, outside := newCopyOutBox(t)
	if err := os.Symlink(outside, filepath.Join(sb.Dir(), "in")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(sb.Dir(), "probe")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := sb.WriteFile(ctx, "/app/in/planted.txt", strings.NewReader("x"), 0o644); err == nil {
		t.Error("WriteFile through a link to a host folder succeeded")
	}
	if err := sb.WriteFile(ctx, "/app/in/sub/planted.txt", strings.NewReader("x"), 0o644); err == nil {
		t.Error("WriteFile below a link to a host folder succeeded")
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("host folder holds %v after the writes; want only secret.txt", names)
	}
	if fi, err := sb.Stat(ctx, "/app/probe"); err == nil {
		t.Errorf("Stat through a link to a host file = size %d; want an error", fi.Size())
	}
	// Writing over a planted link replaces the link, not the host file.
	if err := sb.WriteFile(ctx, "/app/probe", strings.NewReader("mine"), 0o644); err != nil {
		t.Fatalf("WriteFile over a link: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != hostSecret {
		t.Errorf("host file now holds %q", b)
	}
	if b, err := sb.ReadFile(ctx, "/app/probe"); err != nil || string(b) != "mine" {
		t.Errorf("ReadFile after the write = %q, %v", b, err)
	}
	if fi, err := sb.Stat(ctx, "/app/probe"); err != nil || fi.Size() != 4 {
		t.Errorf("Stat of a file of the sandbox = %v, %v", fi, err)
	}
}
