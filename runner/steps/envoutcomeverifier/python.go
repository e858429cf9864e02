package envoutcomeverifier

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentenv/agentenv/runner"
)

// The reference runs a verifier file in its own Python process: it
// imports the file and calls verify(mcp_url), awaiting it when it is a
// coroutine. Such files import `from agentenv_protocol import client`,
// which is the reference's pip package; agent-env ships a standard-library
// subset of it (python/agentenv_protocol) and puts it on PYTHONPATH, so a
// reference verifier runs here with nothing installed. The harness
// (python/agentenv_run_verifier.py) writes the rows, or which phase failed
// and the exception's last line, to a file, so that whatever the verifier
// prints cannot be mistaken for its answer.

//go:embed all:python
var pythonFS embed.FS

// ErrNoPython is matched when a reference verifier needs python3 and the
// machine has none.
var ErrNoPython = errors.New("python3 not found on PATH")

var (
	pythonShebang = regexp.MustCompile(`^#!\S*(?:/env\s+(?:-S\s+)?)?\S*python[0-9.]*\b`)
	// A top-level verify: defined (sync or async), imported or assigned.
	verifyDef = regexp.MustCompile(`(?m)^(?:async\s+def\s+verify\s*\(|def\s+verify\s*\(|verify\s*=|from\s+\S+\s+import\s+(?:.*[\s,(])?verify\b)`)
)

// isReference reports whether a verifier file is a reference-style Python
// verifier: a Python file (".py" or a python shebang) with a top-level
// verify. When it is not, reason says why, for error messages.
func isReference(name string, body []byte) (bool, string) {
	py := strings.HasSuffix(name, ".py") || pythonShebang.Match(firstLine(body))
	switch {
	case !py:
		return false, "not a Python file: no .py name and no python shebang"
	case !verifyDef.Match(body):
		return false, "a Python file without a top-level def verify(mcp_url) or async def verify(mcp_url)"
	}
	return true, ""
}

func firstLine(b []byte) []byte {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return line
}

// runReference runs the verifier at path with the harness, the embedded
// agentenv_protocol package on PYTHONPATH, in dir.
func runReference(ctx context.Context, dir, path, mcpURL string, auth fileAuth) ([]runner.Row, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil, ErrNoPython
	}
	lib := filepath.Join(dir, ".agentenv-python")
	if err := writePythonLib(lib); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, ".agentenv-verifier-result.json")
	cmd := exec.CommandContext(ctx, py, filepath.Join(lib, "agentenv_run_verifier.py"), path, mcpURL, out)
	cmd.Dir = dir
	cmd.Env = append(pythonEnv(os.Environ(), lib), "AGENTENV_MCP_URL="+mcpURL)
	if auth.mcp != "" {
		cmd.Env = append(cmd.Env, "AGENTENV_MCP_AUTHORIZATION="+auth.mcp)
	}
	if auth.control != "" {
		cmd.Env = append(cmd.Env, "AGENTENV_CONTROL_AUTHORIZATION="+auth.control)
	}
	cmd.WaitDelay = waitDelay
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	runErr := cmd.Run()
	b, err := os.ReadFile(out)
	if err != nil {
		if runErr == nil {
			runErr = err
		}
		return nil, fmt.Errorf("the harness ended without an answer: %w; output: %s", runErr, tail(output.String()))
	}
	var res struct {
		Rows  json.RawMessage `json:"rows"`
		Error *struct {
			Phase   string `json:"phase"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("the harness answer is not JSON: %v", err)
	}
	if e := res.Error; e != nil {
		switch e.Phase {
		case "import":
			return nil, fmt.Errorf("importing the file raised %s", e.Message)
		case "missing":
			return nil, fmt.Errorf("%s", e.Message)
		case "raise":
			return nil, fmt.Errorf("verify(mcp_url) raised %s", e.Message)
		}
		return nil, fmt.Errorf("%w: %s", errRowShape, e.Message)
	}
	var raw []any
	if err := json.Unmarshal(res.Rows, &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", errRowShape, err)
	}
	return normaliseRows(raw)
}

// writePythonLib writes the embedded Python files to dir.
func writePythonLib(dir string) error {
	return fs.WalkDir(pythonFS, "python", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "python")))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := pythonFS.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
}

// pythonEnv puts lib first on PYTHONPATH, so that a verifier gets the
// package agent-env ships whatever else the machine has installed (the
// same verifier then behaves the same everywhere), and keeps Python from
// writing bytecode next to the files.
func pythonEnv(env []string, lib string) []string {
	out := make([]string, 0, len(env)+2)
	path := lib
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			if v != "" {
				path += string(os.PathListSeparator) + v
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PYTHONPATH="+path, "PYTHONDONTWRITEBYTECODE=1")
}
