package local

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/agentenv/agentenv/runner/sandbox"
)

var (
	// /app as a whole path segment inside a shell script.
	appInScript = regexp.MustCompile(`(^|[^\w./-])/app($|[^\w.-])`)
	// sudo as a command word.
	sudoInScript = regexp.MustCompile(`(^|[\s;&|(])sudo\s+`)
)

// Exec implements sandbox.Sandbox. The command runs in its own process
// group with AGENTENV_SANDBOX=<id>; "sudo" is dropped and /app is rewritten
// to the work folder, in arguments and inside a top-level `bash -c` script,
// unless the command is a `docker exec`.
func (s *Sandbox) Exec(ctx context.Context, argv []string, o *ExecOptions) (sandbox.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return sandbox.ExecResult{}, err
	}
	if err := s.alive(); err != nil {
		return sandbox.ExecResult{}, err
	}
	var opts sandbox.ExecOptions
	if o != nil {
		opts = *o
	}
	argv = s.rewrite(argv)
	if len(argv) == 0 {
		return sandbox.ExecResult{}, errors.New("local: exec: empty command")
	}
	dir := s.st.Dir
	if opts.Dir != "" {
		d, err := s.resolve(opts.Dir)
		if err != nil {
			return sandbox.ExecResult{}, err
		}
		dir = d
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = s.environ(opts.Env)
	cmd.Stdin = opts.Stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	setGroup(cmd)
	cmd.Cancel = func() error { killGroup(cmd.Process.Pid); return nil }
	cmd.WaitDelay = 5 * time.Second

	s.mu.Lock()
	if s.terminated {
		s.mu.Unlock()
		return sandbox.ExecResult{}, s.alive()
	}
	err := cmd.Start()
	if err == nil {
		s.procs[cmd.Process.Pid] = struct{}{}
	}
	s.mu.Unlock()
	if err != nil {
		return sandbox.ExecResult{ExitCode: 127, Stderr: []byte(err.Error())}, nil
	}
	err = cmd.Wait()
	// The group may hold background children; they die with the command.
	killGroup(cmd.Process.Pid)
	s.mu.Lock()
	delete(s.procs, cmd.Process.Pid)
	s.mu.Unlock()

	res := sandbox.ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if cerr := ctx.Err(); cerr != nil {
		res.ExitCode = -1
		return res, cerr
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if res.ExitCode < 0 { // killed by a signal
			res.ExitCode = 128 + 9
		}
	default:
		if s.alive() != nil {
			return res, s.alive()
		}
		return res, err
	}
	return res, nil
}

// ExecOptions is sandbox.ExecOptions, named here for the method signature.
type ExecOptions = sandbox.ExecOptions

func (s *Sandbox) environ(extra map[string]string) []string {
	env := os.Environ()
	add := func(m map[string]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			env = append(env, k+"="+m[k])
		}
	}
	add(s.st.Env)
	add(extra)
	return append(env, EnvMarker+"="+s.st.ID)
}

func (s *Sandbox) rewrite(argv []string) []string {
	out := make([]string, 0, len(argv))
	for len(argv) > 0 && argv[0] == "sudo" {
		argv = argv[1:]
	}
	if len(argv) >= 2 && filepath.Base(argv[0]) == "docker" && argv[1] == "exec" {
		return append(out, argv...)
	}
	shell := len(argv) >= 3 && isShell(argv[0]) && argv[1] == "-c"
	for i, a := range argv {
		switch {
		case shell && i == 2:
			if !strings.HasPrefix(strings.TrimSpace(a), "docker exec") {
				a = sudoInScript.ReplaceAllString(a, "$1")
				a = s.rewriteScript(a)
			}
		case a == "/app" || strings.HasPrefix(a, "/app/"):
			a = s.st.Dir + a[len("/app"):]
		}
		out = append(out, a)
	}
	return out
}

func (s *Sandbox) rewriteScript(script string) string {
	// Applied twice so that adjacent occurrences sharing a separator are
	// both rewritten.
	for range 2 {
		script = appInScript.ReplaceAllStringFunc(script, func(m string) string {
			sub := appInScript.FindStringSubmatch(m)
			return sub[1] + s.st.Dir + sub[2]
		})
	}
	return script
}

func isShell(name string) bool {
	switch filepath.Base(name) {
	case "bash", "sh", "dash", "zsh":
		return true
	}
	return false
}
