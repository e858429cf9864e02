package imagebuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// GoOptions tunes BuildGo; nil means defaults.
type GoOptions struct {
	// Dir is where `go build` runs (inside the module holding the package);
	// "" is the current directory.
	Dir string
	// GOOS and GOARCH default to linux and the host architecture: the
	// binary runs in a Linux container or, on a Linux host, as a process.
	GOOS, GOARCH string
	// Name is the binary's file name; "" is the package's last element.
	Name string
	// Progress, when set, receives a line per module downloaded and per
	// package compiled (go build -v), as they happen: a first build
	// downloads and compiles for minutes, and says so instead of staying
	// silent. It is written from one goroutine, on a pipe as on a terminal.
	Progress io.Writer
}

// BuildError is a failed compilation; Log holds the tail of the output.
type BuildError struct {
	Package string
	Log     string
	Err     error
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("build %s: %v\n%s", e.Package, e.Err, e.Log)
}

func (e *BuildError) Unwrap() error { return e.Err }

// ErrNoGo is returned when no Go toolchain is on PATH.
var ErrNoGo = errors.New("the go command is not on PATH (needed to build --go-package sources)")

// BuildGo compiles pkg into a static binary inside outDir and returns its
// path: CGO_ENABLED=0 go build -trimpath -ldflags="-s -w".
func BuildGo(ctx context.Context, pkg, outDir string, o *GoOptions) (string, error) {
	var opt GoOptions
	if o != nil {
		opt = *o
	}
	if strings.TrimSpace(pkg) == "" {
		return "", fmt.Errorf("imagebuild: go package is required")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", ErrNoGo
	}
	if opt.GOOS == "" {
		opt.GOOS = "linux"
	}
	if opt.GOARCH == "" {
		opt.GOARCH = runtime.GOARCH
	}
	name := opt.Name
	if name == "" {
		name = filepath.Base(strings.TrimSuffix(pkg, "/"))
		if name == "." || name == "/" || name == "" {
			name = "app"
		}
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", fmt.Errorf("imagebuild: %w", err)
	}
	out := filepath.Join(outDir, name)
	args := []string{"build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg}
	if opt.Progress != nil {
		args = append([]string{"build", "-v"}, args[1:]...)
		fmt.Fprintf(opt.Progress, "Building %s (go build; a first build downloads and compiles its dependencies)\n", pkg)
	}
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = opt.Dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+opt.GOOS, "GOARCH="+opt.GOARCH)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if opt.Progress != nil {
		mw := io.MultiWriter(&log, &progressLines{w: opt.Progress})
		cmd.Stdout, cmd.Stderr = mw, mw // one writer: exec copies from one goroutine
	}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &BuildError{Package: pkg, Log: Tail(log.String(), 20), Err: err}
	}
	if opt.Progress != nil {
		fmt.Fprintf(opt.Progress, "Built %s\n", pkg)
	}
	return out, nil
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// progressLines turns go build -v output into progress lines: "go:
// downloading M v" lines as they are, package paths as "compiling P".
// exec.Cmd copies both streams from one goroutine when they share a
// writer, so no lock is needed.
type progressLines struct {
	w       io.Writer
	partial []byte
}

func (p *progressLines) Write(b []byte) (int, error) {
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := strings.TrimSpace(string(p.partial[:i]))
		p.partial = p.partial[i+1:]
		switch {
		case line == "", strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "go: "):
			fmt.Fprintf(p.w, "  %s\n", line)
		case !strings.ContainsAny(line, " \t:"):
			fmt.Fprintf(p.w, "  compiling %s\n", line)
		}
	}
}
