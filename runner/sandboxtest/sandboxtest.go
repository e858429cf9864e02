// Package sandboxtest is the conformance suite every sandbox provider must
// pass: create, exec, write and read files, copy files out without
// following a symlink out of the copied folder, terminate (idempotently),
// cancelled-context behaviour, the Capabilities claims checked against
// behaviour, and — through Options.Leftovers — that nothing leaks.
//
// A provider's test is one call:
//
//	func TestConformance(t *testing.T) {
//		sandboxtest.Run(t, func(t *testing.T) sandbox.Provider {
//			return local.New(t.TempDir(), nil)
//		})
//	}
//
// Sandboxes are created in VM mode; the commands used are POSIX sh, sleep,
// cat and ln, which a VM sandbox is expected to have. The CopyOut cases
// also run on a container-only provider given Options.ContainerSpec and
// Options.Symlink.
package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/runner/sandbox"
)

// Factory returns a fresh provider; the suite closes it.
type Factory func(t *testing.T) sandbox.Provider

// Options extends the suite with provider-specific checks; nil means none.
type Options struct {
	// Leftovers lists what a terminated sandbox left behind (processes,
	// folders, containers). pid is the id of a background process the suite
	// started inside the sandbox, as the sandbox printed it. An empty result
	// means nothing leaked.
	Leftovers func(t *testing.T, sb sandbox.Sandbox, pid string) []string
	// ContainerSpec is a container-mode sandbox the provider can create;
	// the CopyOut cases, which need no shell when Symlink is set, use it
	// when the provider has no VM mode. Nil skips them there.
	ContainerSpec *sandbox.Spec
	// Symlink plants a symlink at the sandbox path link pointing to target
	// (stored as given), as an agent in the sandbox would; the link's
	// folder exists. Nil runs `ln -s target link` in the sandbox.
	Symlink func(t *testing.T, sb sandbox.Sandbox, target, link string)
}

// Run runs the suite without provider-specific leak checks.
func Run(t *testing.T, f Factory) { RunWith(t, f, nil) }

// RunWith runs the suite.
func RunWith(t *testing.T, f Factory, o *Options) {
	var opts Options
	if o != nil {
		opts = *o
	}
	newProvider := func(t *testing.T) sandbox.Provider {
		p := f(t)
		t.Cleanup(func() {
			if err := p.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return p
	}
	create := func(t *testing.T, p sandbox.Provider) sandbox.Sandbox {
		t.Helper()
		if !p.Capabilities().VM {
			t.Skip("provider has no VM mode")
		}
		sb, err := p.CreateSandbox(context.Background(), sandbox.Spec{Name: "t", Mode: sandbox.ModeVM,
			Env: map[string]string{"SANDBOXTEST_VAR": "v1"}})
		if err != nil {
			t.Fatalf("CreateSandbox: %v", err)
		}
		t.Cleanup(func() { _ = sb.Terminate(context.Background()) })
		return sb
	}

	t.Run("Identity", func(t *testing.T) {
		p := newProvider(t)
		sb := create(t, p)
		if sb.ID() == "" {
			t.Error("empty ID")
		}
		if sb.Type() != p.Type() {
			t.Errorf("Type() = %q, provider type %q", sb.Type(), p.Type())
		}
		if sb.Mode() != sandbox.ModeVM {
			t.Errorf("Mode() = %q", sb.Mode())
		}
		if h := sb.Handle(); h.ID != sb.ID() || h.Type != p.Type() {
			t.Errorf("Handle() = %+v", h)
		}
		sb2 := create(t, p)
		if sb2.ID() == sb.ID() {
			t.Errorf("two sandboxes share id %q", sb.ID())
		}
	})

	t.Run("Exec", func(t *testing.T) {
		sb := create(t, newProvider(t))
		ctx := context.Background()
		res, err := sb.Exec(ctx, []string{"sh", "-c", "echo out; echo err >&2; echo $SANDBOXTEST_VAR"}, nil)
		if err != nil {
			t.Fatalf("Exec: %v", err)
		}
		if res.ExitCode != 0 || string(res.Stdout) != "out\nv1\n" || string(res.Stderr) != "err\n" {
			t.Errorf("Exec = %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
		}
		res, err = sb.Exec(ctx, []string{"sh", "-c", "exit 7"}, nil)
		if err != nil || res.ExitCode != 7 {
			t.Errorf("non-zero exit: %d, %v (want 7, nil)", res.ExitCode, err)
		}
		res, err = sb.Exec(ctx, []string{"sh", "-c", "cat"}, &sandbox.ExecOptions{
			Stdin: strings.NewReader("piped"), Env: map[string]string{"X": "1"}})
		if err != nil || string(res.Stdout) != "piped" {
			t.Errorf("stdin: %q, %v", res.Stdout, err)
		}
		res, err = sb.Exec(ctx, []string{"definitely-not-a-command-xyz"}, nil)
		if err == nil && res.ExitCode == 0 {
			t.Error("a missing command succeeded")
		}
	})

	t.Run("ConcurrentExec", func(t *testing.T) {
		sb := create(t, newProvider(t))
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := sb.Exec(context.Background(), []string{"sh", "-c", "echo " + string(rune('a'+i))}, nil)
				if err == nil && strings.TrimSpace(string(res.Stdout)) != string(rune('a'+i)) {
					err = errors.New("wrong output " + string(res.Stdout))
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("Files", func(t *testing.T) {
		sb := create(t, newProvider(t))
		ctx := context.Background()
		if err := sb.WriteFile(ctx, "/app/dir/sub/a.txt", strings.NewReader("hello"), 0o644); err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
		b, err := sb.ReadFile(ctx, "/app/dir/sub/a.txt")
		if err != nil || string(b) != "hello" {
			t.Fatalf("ReadFile = %q, %v", b, err)
		}
		if b, err := sb.ReadFile(ctx, "dir/sub/a.txt"); err != nil || string(b) != "hello" {
			t.Errorf("relative ReadFile = %q, %v", b, err)
		}
		if err := sb.WriteFile(ctx, "/app/dir/sub/a.txt", strings.NewReader("replaced"), 0o644); err != nil {
			t.Fatalf("overwrite: %v", err)
		}
		res, err := sb.Exec(ctx, []string{"sh", "-c", "cat /app/dir/sub/a.txt"}, nil)
		if err != nil || string(res.Stdout) != "replaced" {
			t.Errorf("exec sees %q, %v", res.Stdout, err)
		}
		res, err = sb.Exec(ctx, []string{"cat", "sub/a.txt"}, &sandbox.ExecOptions{Dir: "/app/dir"})
		if err != nil || string(res.Stdout) != "replaced" {
			t.Errorf("exec in Dir sees %q, %v", res.Stdout, err)
		}
		if _, err := sb.Exec(ctx, []string{"sh", "-c", "echo made > /app/made.txt"}, nil); err != nil {
			t.Fatal(err)
		}
		if b, err := sb.ReadFile(ctx, "/app/made.txt"); err != nil || string(b) != "made\n" {
			t.Errorf("file written by exec = %q, %v", b, err)
		}
		if fi, err := sb.Stat(ctx, "/app/dir/sub"); err != nil || !fi.IsDir() {
			t.Errorf("Stat dir: %v, %v", fi, err)
		}
		if fi, err := sb.Stat(ctx, "/app/dir/sub/a.txt"); err != nil || fi.IsDir() || fi.Size() != 8 {
			t.Errorf("Stat file: %v, %v", fi, err)
		}
		if _, err := sb.ReadFile(ctx, "/app/missing"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing ReadFile: %v, want fs.ErrNotExist", err)
		}
		if _, err := sb.Stat(ctx, "/app/missing"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing Stat: %v, want fs.ErrNotExist", err)
		}
		big := bytes.Repeat([]byte("x"), 1<<20)
		if err := sb.WriteFile(ctx, "/app/big", bytes.NewReader(big), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, _ := sb.ReadFile(ctx, "/app/big"); !bytes.Equal(b, big) {
			t.Error("1 MiB file did not round-trip")
		}
	})

	t.Run("CopyOut", func(t *testing.T) { copyOut(t, newProvider(t), opts) })

	t.Run("CancelledContext", func(t *testing.T) {
		sb := create(t, newProvider(t))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := sb.Exec(ctx, []string{"sh", "-c", "echo no > /app/ran"}, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("Exec with a cancelled context: %v, want context.Canceled", err)
		}
		if _, err := sb.Stat(context.Background(), "/app/ran"); err == nil {
			t.Error("a command ran under a cancelled context")
		}
		if err := sb.WriteFile(ctx, "/app/w", strings.NewReader("x"), 0o644); !errors.Is(err, context.Canceled) {
			t.Errorf("WriteFile with a cancelled context: %v", err)
		}
		if _, err := newProvider(t).CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeVM}); !errors.Is(err, context.Canceled) {
			t.Errorf("CreateSandbox with a cancelled context: %v", err)
		}

		// Cancel while running: the command must stop and Exec return.
		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := sb.Exec(ctx, []string{"sh", "-c", "echo started > /app/started; sleep 300"}, nil)
			done <- err
		}()
		waitFor(t, func() bool { _, err := sb.Stat(context.Background(), "/app/started"); return err == nil })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Exec cancelled mid-run: %v, want context.Canceled", err)
		}
		res, err := sb.Exec(context.Background(), []string{"sh", "-c", "echo alive"}, nil)
		if err != nil || string(res.Stdout) != "alive\n" {
			t.Errorf("sandbox unusable after a cancelled exec: %q, %v", res.Stdout, err)
		}
	})

	t.Run("Terminate", func(t *testing.T) {
		p := newProvider(t)
		sb := create(t, p)
		ctx := context.Background()
		res, err := sb.Exec(ctx, []string{"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		pid := strings.TrimSpace(string(res.Stdout))
		// A command still running when Terminate is called must end too.
		running := make(chan error, 1)
		go func() {
			_, err := sb.Exec(ctx, []string{"sh", "-c", "echo started > /app/long; sleep 300"}, nil)
			running <- err
		}()
		waitFor(t, func() bool { _, err := sb.Stat(ctx, "/app/long"); return err == nil })
		if err := sb.Terminate(ctx); err != nil {
			t.Fatalf("Terminate: %v", err)
		}
		<-running
		if err := sb.Terminate(ctx); err != nil {
			t.Errorf("second Terminate: %v", err)
		}
		if _, err := sb.Exec(ctx, []string{"true"}, nil); !errors.Is(err, sandbox.ErrTerminated) {
			t.Errorf("Exec after Terminate: %v, want ErrTerminated", err)
		}
		if err := sb.WriteFile(ctx, "/app/x", strings.NewReader("x"), 0); !errors.Is(err, sandbox.ErrTerminated) {
			t.Errorf("WriteFile after Terminate: %v, want ErrTerminated", err)
		}
		if opts.Leftovers != nil {
			if left := opts.Leftovers(t, sb, pid); len(left) > 0 {
				t.Errorf("terminated sandbox left: %v", left)
			}
		}
		if r, ok := p.(sandbox.Reconnector); ok {
			if _, err := r.GetSandbox(ctx, sb.Handle()); !errors.Is(err, sandbox.ErrNotFound) {
				t.Errorf("GetSandbox after Terminate: %v, want ErrNotFound", err)
			}
		}
	})

	t.Run("Sweep", func(t *testing.T) {
		p := newProvider(t)
		sw, ok := p.(sandbox.Sweeper)
		if !ok {
			t.Skip("provider is not a sandbox.Sweeper")
		}
		spec := sandbox.Spec{Mode: sandbox.ModeVM}
		switch {
		case p.Capabilities().VM:
		case opts.ContainerSpec != nil:
			spec = *opts.ContainerSpec
		default:
			t.Skip("no spec this provider can create")
		}
		ctx := context.Background()
		mk := func(labels map[string]string) sandbox.Sandbox {
			t.Helper()
			s := spec
			s.Labels = labels
			sb, err := p.CreateSandbox(ctx, s)
			if err != nil {
				t.Fatalf("CreateSandbox: %v", err)
			}
			t.Cleanup(func() { _ = sb.Terminate(context.Background()) })
			return sb
		}
		// A unique run label keeps the suite off other tests' sandboxes.
		run := "sandboxtest-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + time.Now().Format("150405.000000000")
		gone := mk(map[string]string{"sandboxtest.run": run, "sandboxtest.step": "a"})
		kept := mk(map[string]string{"sandboxtest.run": run, "sandboxtest.step": "b"})
		if _, err := sw.Sweep(ctx, nil); !errors.Is(err, sandbox.ErrNoSweepLabels) {
			t.Errorf("Sweep with no labels: %v, want ErrNoSweepLabels", err)
		}
		ids, err := sw.Sweep(ctx, map[string]string{"sandboxtest.run": run, "sandboxtest.step": "a"})
		if err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		if len(ids) != 1 || ids[0] != gone.ID() {
			t.Errorf("Sweep removed %v, want [%s]", ids, gone.ID())
		}
		if r, ok := p.(sandbox.Reconnector); ok {
			if _, err := r.GetSandbox(ctx, gone.Handle()); !errors.Is(err, sandbox.ErrNotFound) {
				t.Errorf("GetSandbox of a swept sandbox: %v, want ErrNotFound", err)
			}
			if _, err := r.GetSandbox(ctx, kept.Handle()); err != nil {
				t.Errorf("a sandbox with other labels went too: %v", err)
			}
		}
		ids, err = sw.Sweep(ctx, map[string]string{"sandboxtest.run": run})
		if err != nil || len(ids) != 1 || ids[0] != kept.ID() {
			t.Errorf("Sweep of the run = %v, %v; want [%s]", ids, err, kept.ID())
		}
	})

	t.Run("Capabilities", func(t *testing.T) {
		p := newProvider(t)
		caps := p.Capabilities()
		ctx := context.Background()
		if !caps.Container {
			_, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: "x:1", Port: 80})
			if !errors.Is(err, sandbox.ErrNotSupported) {
				t.Errorf("container mode not claimed, CreateSandbox: %v, want ErrNotSupported", err)
			}
		}
		if !caps.NetworkPolicy && caps.VM {
			_, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeVM,
				NetworkPolicy: sandbox.NetworkPolicy{Mode: "allowlist", AllowHosts: []string{"example.com"}}})
			if !errors.Is(err, sandbox.ErrNotSupported) {
				t.Errorf("network policy not claimed, allowlist: %v, want ErrNotSupported", err)
			}
		}
		_, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: "bogus"})
		if !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Errorf("bogus mode: %v, want ErrInvalidSpec", err)
		}
		r, isReconnector := p.(sandbox.Reconnector)
		if caps.Reconnect != isReconnector {
			t.Fatalf("Capabilities.Reconnect=%v but Reconnector implemented=%v", caps.Reconnect, isReconnector)
		}
		if caps.Reconnect {
			sb := create(t, p)
			if err := sb.WriteFile(ctx, "/app/mark", strings.NewReader("m"), 0); err != nil {
				t.Fatal(err)
			}
			again, err := r.GetSandbox(ctx, sb.Handle())
			if err != nil {
				t.Fatalf("GetSandbox: %v", err)
			}
			if again.ID() != sb.ID() {
				t.Errorf("reconnected id %q, want %q", again.ID(), sb.ID())
			}
			if b, err := again.ReadFile(ctx, "/app/mark"); err != nil || string(b) != "m" {
				t.Errorf("reconnected sandbox reads %q, %v", b, err)
			}
			if _, err := r.GetSandbox(ctx, sandbox.Handle{Type: p.Type(), ID: "nope"}); !errors.Is(err, sandbox.ErrNotFound) {
				t.Errorf("GetSandbox of an unknown id: %v, want ErrNotFound", err)
			}
			if err := again.Terminate(ctx); err != nil {
				t.Errorf("terminate through a reconnected handle: %v", err)
			}
		}
	})
}

// waitFor polls cond until it holds, failing the test after 30 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatal("condition not met within 30s")
		case <-tick.C:
		}
	}
}
