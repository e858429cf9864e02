package gobuild

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
)

// AgentenvModule is the module path of agent-env itself.
const AgentenvModule = "github.com/agentenv/agentenv"

// SourceEnv names the environment variable that points at an agentenv
// source folder.
const SourceEnv = "AGENTENV_SOURCE"

// ErrNoToolchain is returned when no go command can be found.
var ErrNoToolchain = errors.New("no Go toolchain found: plugin add builds a new agent-env with the go command; " +
	"install Go 1.26 or newer (https://go.dev/doc/install, or your system's golang package), " +
	"make sure `go version` works in this shell, and run the command again")

// ErrNoSource is returned when the agentenv sources cannot be found.
var ErrNoSource = errors.New("the agentenv sources to build from cannot be found")

// Request is one build.
type Request struct {
	// Plugins are the plugin modules to compile in (may be empty: a plain
	// agent-env).
	Plugins []Module
	// Source is the agentenv source folder; "" means discover it (see the
	// package doc).
	Source string
	// Output is where the binary is written.
	Output string
	// Version is stamped into the binary (main.version); "" keeps "dev".
	Version string
	// Go is the go command; "" means the one on PATH.
	Go string
	// Log receives the go command's progress lines; nil discards them.
	Log io.Writer
}

// Error is a failed go command, with the tail of its output.
type Error struct {
	Step   string // "go mod tidy", "go build"
	Output string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s failed: %v\n%s", e.Step, e.Err, e.Output)
}

func (e *Error) Unwrap() error { return e.Err }

// Build writes a custom agent-env binary to r.Output. It returns the
// agentenv source folder it built from.
func Build(ctx context.Context, r *Request) (string, error) {
	goCmd := r.Go
	if goCmd == "" {
		p, err := exec.LookPath("go")
		if err != nil {
			return "", ErrNoToolchain
		}
		goCmd = p
	} else if _, err := exec.LookPath(goCmd); err != nil {
		return "", ErrNoToolchain
	}
	src, err := FindSource(ctx, r.Source, goCmd)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "agent-env-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := writeBuildFiles(dir, src, r.Plugins); err != nil {
		return "", err
	}
	logw := r.Log
	if logw == nil {
		logw = io.Discard
	}
	modfile := "-modfile=" + filepath.Join(dir, "go.mod")
	run := func(step string, args ...string) error {
		fmt.Fprintf(logw, "$ go %s\n", strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, goCmd, args...)
		cmd.Dir = src
		// -mod=mod lets go build add the plugins' own requirements to the
		// temporary go.mod; the user's other GOFLAGS still apply.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off",
			"GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, logw), io.MultiWriter(&out, logw)
		if err := cmd.Run(); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &Error{Step: step, Output: tail(out.String(), 40), Err: err}
		}
		return nil
	}
	for _, m := range r.Plugins {
		if m.Dir == "" {
			v := m.Version
			if v == "" {
				v = "latest"
			}
			if err := run("go get "+m.Path, "get", modfile, m.Path+"@"+v); err != nil {
				return "", err
			}
		}
	}
	args := []string{"build", modfile, "-overlay=" + filepath.Join(dir, "overlay.json"), "-buildvcs=false", "-o", r.Output}
	if r.Version != "" {
		args = append(args, "-ldflags", "-X main.version="+r.Version)
	}
	if err := run("go build", append(args, "./cmd/agent-env")...); err != nil {
		return "", err
	}
	return src, nil
}

// writeBuildFiles writes what turns the agentenv module into a build with
// plugins, without touching its folder: a go.mod and go.sum (the module's
// own plus a requirement and replace per local plugin; used with
// -modfile), the generated file of plugin imports and the overlay that
// places it in cmd/agent-env.
func writeBuildFiles(dir, src string, plugins []Module) error {
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoSource, err)
	}
	mod := strings.TrimRight(string(gomod), "\n") + "\n"
	sums := []string{filepath.Join(src, "go.sum")}
	const zero = "v0.0.0-00010101000000-000000000000"
	for _, m := range plugins {
		if m.Dir != "" {
			mod += fmt.Sprintf("\nrequire %s %s\n\nreplace %s => %s\n", m.Path, zero, m.Path, strconv.Quote(m.Dir))
			sums = append(sums, filepath.Join(m.Dir, "go.sum"))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), mergeSums(sums), 0o644); err != nil {
		return err
	}
	gen := filepath.Join(dir, "zz_plugins_gen.go")
	if err := os.WriteFile(gen, importsFile(plugins), 0o644); err != nil {
		return err
	}
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{
		filepath.Join(src, "cmd", "agent-env", "zz_plugins_gen.go"): gen}})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644)
}

// importsFile is the generated Go file: one blank import per plugin.
func importsFile(plugins []Module) []byte {
	var b strings.Builder
	b.WriteString("// Code generated by agent-env plugin add. DO NOT EDIT.\n\n")
	b.WriteString("// The plugins' init functions register them (plugin.Register).\n\npackage main\n")
	if len(plugins) > 0 {
		b.WriteString("\nimport (\n")
		for _, m := range plugins {
			fmt.Fprintf(&b, "\t_ %s\n", strconv.Quote(m.Path))
		}
		b.WriteString(")\n")
	}
	return []byte(b.String())
}

// mergeSums concatenates go.sum files without repeated lines; missing
// files are skipped (go mod tidy adds what is missing).
func mergeSums(paths []string) []byte {
	seen := map[string]bool{}
	var lines []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !seen[l] {
				seen[l] = true
				lines = append(lines, l)
			}
		}
	}
	sort.Strings(lines)
	if len(lines) == 0 {
		return nil
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// ModulePath returns the module path declared by dir/go.mod.
func ModulePath(dir string) (string, error) {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("%s is not a Go module folder: %w", dir, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			if p, err := strconv.Unquote(strings.TrimSpace(rest)); err == nil {
				return p, nil
			}
			return strings.TrimSpace(rest), nil
		}
	}
	return "", fmt.Errorf("%s/go.mod declares no module", dir)
}

// FindSource returns the agentenv source folder: dir when given, else
// $AGENTENV_SOURCE, else the folder this binary was compiled from, else
// the module cache copy of this binary's released agentenv version
// (downloaded with goCmd). The folder must hold the agentenv module.
func FindSource(ctx context.Context, dir, goCmd string) (string, error) {
	var tried []string
	check := func(d, from string) (string, bool) {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", false
		}
		if p, err := ModulePath(abs); err == nil && p == AgentenvModule {
			return abs, true
		}
		tried = append(tried, fmt.Sprintf("%s (%s) does not hold the %s module", abs, from, AgentenvModule))
		return "", false
	}
	if dir != "" {
		if s, ok := check(dir, "--agentenv-source"); ok {
			return s, nil
		}
		return "", fmt.Errorf("%w: %s", ErrNoSource, strings.Join(tried, "; "))
	}
	if env := os.Getenv(SourceEnv); env != "" {
		if s, ok := check(env, SourceEnv); ok {
			return s, nil
		}
		return "", fmt.Errorf("%w: %s", ErrNoSource, strings.Join(tried, "; "))
	}
	if d := compiledFrom(); d != "" {
		if s, ok := check(d, "the folder agent-env was built from"); ok {
			return s, nil
		}
	}
	if v := releasedVersion(); v != "" {
		d, err := download(ctx, goCmd, AgentenvModule+"@"+v)
		if err == nil {
			return d, nil
		}
		tried = append(tried, fmt.Sprintf("%s@%s could not be downloaded: %v", AgentenvModule, v, err))
	}
	tried = append(tried, "pass --agentenv-source DIR or set "+SourceEnv+" to a checkout of "+AgentenvModule)
	return "", fmt.Errorf("%w: %s", ErrNoSource, strings.Join(tried, "; "))
}

// compiledFrom is the module root this file was compiled from: the
// compiler records absolute source paths unless -trimpath was used.
func compiledFrom() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(file))) // <root>/plugin/gobuild/build.go
}

// releasedVersion is the agentenv module version this binary was built
// at, when it is one the module proxy can serve (not a local or modified
// build).
func releasedVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	v := ""
	if bi.Main.Path == AgentenvModule {
		v = bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == AgentenvModule && d.Replace == nil {
			v = d.Version
		}
	}
	if v == "" || v == "(devel)" || strings.Contains(v, "+") {
		return ""
	}
	return v
}

// download fetches a module into the module cache and returns its folder.
func download(ctx context.Context, goCmd, modVersion string) (string, error) {
	cmd := exec.CommandContext(ctx, goCmd, "mod", "download", "-json", modVersion)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return "", err
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", err
	}
	if info.Error != "" {
		return "", errors.New(info.Error)
	}
	return info.Dir, nil
}

// tail keeps the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
