package sandboxtest

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner/sandbox"
)

// copyOut checks Sandbox.CopyOut: links inside the copied folder are
// followed (files under the link's path, folders walked), and a link that
// resolves outside it, dangles or loops fails the copy naming the link,
// with nothing from outside handed to the callback.
func copyOut(t *testing.T, p sandbox.Provider, opts Options) {
	ctx := context.Background()
	spec := sandbox.Spec{Name: "t", Mode: sandbox.ModeVM}
	if !p.Capabilities().VM {
		if opts.ContainerSpec == nil {
			t.Skip("provider has no VM mode and the suite was given no ContainerSpec")
		}
		spec = *opts.ContainerSpec
	}
	sb, err := p.CreateSandbox(ctx, spec)
	if err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	t.Cleanup(func() { _ = sb.Terminate(context.Background()) })
	write := func(t *testing.T, p, content string) {
		t.Helper()
		if err := sb.WriteFile(ctx, p, strings.NewReader(content), 0o644); err != nil {
			t.Fatalf("WriteFile %s: %v", p, err)
		}
	}
	link := func(t *testing.T, target, at string) {
		t.Helper()
		if opts.Symlink != nil {
			opts.Symlink(t, sb, target, at)
			return
		}
		res, err := sb.Exec(ctx, []string{"ln", "-s", target, at}, nil)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("ln -s %s %s: %d %s %v", target, at, res.ExitCode, res.Stderr, err)
		}
	}
	// collect copies root out and returns path -> content.
	collect := func(root string, o *sandbox.CopyOutOptions) (map[string]string, error) {
		got := map[string]string{}
		err := sb.CopyOut(ctx, root, o, func(f sandbox.File) error {
			if _, dup := got[f.Path]; dup {
				t.Errorf("%s handed over twice", f.Path)
			}
			got[f.Path] = string(f.Data)
			return nil
		})
		return got, err
	}
	const secret = "SECRET-outside-the-folder"
	write(t, "/app/secret.txt", secret)

	t.Run("InsideLinks", func(t *testing.T) {
		write(t, "/app/in/a.txt", "A")
		write(t, "/app/in/sub/b.txt", "B")
		link(t, "a.txt", "/app/in/la")
		link(t, "../a.txt", "/app/in/sub/lb")
		link(t, "/app/in/sub/b.txt", "/app/in/labs")
		link(t, "sub", "/app/in/ldir")
		link(t, "la", "/app/in/chain")
		got, err := collect("/app/in", nil)
		if err != nil {
			t.Fatalf("CopyOut: %v", err)
		}
		want := map[string]string{"a.txt": "A", "la": "A", "labs": "B", "chain": "A",
			"sub/b.txt": "B", "sub/lb": "A", "ldir/b.txt": "B", "ldir/lb": "A"}
		if !maps.Equal(got, want) {
			t.Errorf("CopyOut = %v, want %v", got, want)
		}
		got, err = collect("/app/in", &sandbox.CopyOutOptions{Paths: []string{"la", "sub/lb", "ldir/b.txt"}})
		if err != nil || !maps.Equal(got, map[string]string{"la": "A", "sub/lb": "A", "ldir/b.txt": "B"}) {
			t.Errorf("named paths through links = %v, %v", got, err)
		}
		// ReadFile follows the same links (never reading a link as an
		// empty file).
		for p, want := range map[string]string{"/app/in/la": "A", "/app/in/chain": "A", "/app/in/labs": "B", "/app/in/ldir/b.txt": "B", "/app/in/ldir/lb": "A"} {
			if b, err := sb.ReadFile(ctx, p); err != nil || string(b) != want {
				t.Errorf("ReadFile(%s) = %q, %v; want %q", p, b, err, want)
			}
		}
		if _, err := collect("/app/in", &sandbox.CopyOutOptions{Paths: []string{"ldir"}}); err == nil {
			t.Error("a named folder was copied as a file")
		}
		if _, err := collect("/app/in", &sandbox.CopyOutOptions{Paths: []string{"../secret.txt"}}); err == nil {
			t.Error("a named path with '..' was accepted")
		}
		var seen []string
		_ = sb.CopyOut(ctx, "/app/in", &sandbox.CopyOutOptions{Skip: func(rel string) bool {
			seen = append(seen, rel)
			return rel != "a.txt"
		}}, func(f sandbox.File) error {
			if f.Path != "a.txt" {
				t.Errorf("skipped %s was handed over", f.Path)
			}
			return nil
		})
		if !slices.Contains(seen, "ldir") || slices.Contains(seen, "sub") {
			t.Errorf("Skip was asked about %v; want files and links, not folders", seen)
		}
	})

	refused := []struct {
		name, at, target string
		want             error
		walkOnly         bool // named, the link is a folder: refused as one
	}{
		{"OutsideFile", "x", "../secret.txt", sandbox.ErrLinkOutside, false},
		{"OutsideAbsolute", "x", "/etc/passwd", sandbox.ErrLinkOutside, false},
		{"OutsideDir", "d", "..", sandbox.ErrLinkOutside, false},
		{"OutsideAbsoluteDir", "d", "/", sandbox.ErrLinkOutside, false},
		{"DotDotChain", "sub/x", "../../../../../../../../etc/passwd", sandbox.ErrLinkOutside, false},
		{"DotDotOutAndBack", "sub/x", "../sub/../../secret.txt", sandbox.ErrLinkOutside, false},
		{"Dangling", "x", "nope.txt", fs.ErrNotExist, false},
		{"Self", "x", "x", sandbox.ErrLinkLoop, false},
		{"FolderLoop", "sub/up", "..", sandbox.ErrLinkLoop, true},
	}
	for i, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			root := "/app/refused" + string(rune('a'+i))
			write(t, root+"/ok.txt", "fine")
			write(t, root+"/sub/ok.txt", "fine")
			link(t, c.target, root+"/"+c.at)
			runs := []*sandbox.CopyOutOptions{nil, {Paths: []string{"ok.txt", c.at}}}
			if c.walkOnly {
				runs = runs[:1]
			}
			for _, o := range runs {
				got, err := collect(root, o)
				checkRefused(t, err, root, c.at, c.target, c.want)
				for p, v := range got {
					if strings.Contains(v, secret) {
						t.Errorf("%s: outside content handed over as %s", c.name, p)
					}
				}
			}
			// A skipped link is never resolved.
			if _, err := collect(root, &sandbox.CopyOutOptions{Skip: func(rel string) bool { return rel == c.at }}); err != nil {
				t.Errorf("with the link skipped: %v", err)
			}
		})
	}

	t.Run("OutAndBackIn", func(t *testing.T) {
		// Passing above the folder is leaving it, even on the way back.
		write(t, "/app/back/ok.txt", "fine")
		link(t, "../back/ok.txt", "/app/back/x")
		_, err := collect("/app/back", nil)
		checkRefused(t, err, "/app/back", "x", "../back/ok.txt", sandbox.ErrLinkOutside)
	})

	t.Run("Loop", func(t *testing.T) {
		write(t, "/app/loop/ok.txt", "fine")
		link(t, "l2", "/app/loop/l1")
		link(t, "l1", "/app/loop/l2")
		_, err := collect("/app/loop", nil)
		var le *sandbox.LinkError
		if !errors.Is(err, sandbox.ErrLinkLoop) || !errors.As(err, &le) {
			t.Errorf("CopyOut of a link loop: %v, want a LinkError wrapping ErrLinkLoop", err)
		}
	})

	t.Run("OutsideViaInsideLink", func(t *testing.T) {
		write(t, "/app/via/ok.txt", "fine")
		link(t, "b", "/app/via/a")
		link(t, "../secret.txt", "/app/via/b")
		_, err := collect("/app/via", &sandbox.CopyOutOptions{Paths: []string{"a"}})
		checkRefused(t, err, "/app/via", "b", "../secret.txt", sandbox.ErrLinkOutside)
	})

	t.Run("SizeLimit", func(t *testing.T) {
		write(t, "/app/big/a.txt", "0123456789")
		write(t, "/app/big/b.txt", "0123456789")
		if got, err := collect("/app/big", &sandbox.CopyOutOptions{MaxBytes: 20}); err != nil || len(got) != 2 {
			t.Errorf("copy at the limit = %v, %v", got, err)
		}
		// Past the limit, with or without a filter, the copy fails naming
		// the folder; skipped files do not count.
		for _, o := range []*sandbox.CopyOutOptions{{MaxBytes: 19}, {MaxBytes: 19, Skip: func(string) bool { return false }}} {
			if _, err := collect("/app/big", o); !errors.Is(err, sandbox.ErrTooLarge) || !strings.Contains(err.Error(), "/app/big") {
				t.Errorf("copy past the limit: %v, want ErrTooLarge naming /app/big", err)
			}
		}
		if got, err := collect("/app/big", &sandbox.CopyOutOptions{MaxBytes: 10, Skip: func(rel string) bool { return rel == "b.txt" }}); err != nil || len(got) != 1 {
			t.Errorf("copy of what the filter keeps = %v, %v", got, err)
		}
	})

	t.Run("MissingRoot", func(t *testing.T) {
		if _, err := collect("/app/no-such-folder", nil); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("CopyOut of a missing folder: %v, want fs.ErrNotExist", err)
		}
	})
}

// checkRefused wants err to be a *LinkError for the link at (relative to
// root) pointing to target, wrapping want, and its text to name both.
func checkRefused(t *testing.T, err error, root, at, target string, want error) {
	t.Helper()
	var le *sandbox.LinkError
	if !errors.Is(err, want) || !errors.As(err, &le) {
		t.Fatalf("CopyOut: %v, want a *LinkError wrapping %v", err, want)
	}
	if le.Path != at || le.Target != target {
		t.Errorf("LinkError names %s -> %s, want %s -> %s", le.Path, le.Target, at, target)
	}
	if msg := err.Error(); !strings.Contains(msg, root+"/"+at) || !strings.Contains(msg, target) {
		t.Errorf("error %q does not name the link %s/%s and its target %s", msg, root, at, target)
	}
}
