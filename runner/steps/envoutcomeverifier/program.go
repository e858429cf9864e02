package envoutcomeverifier

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
)

// programTimeout bounds a verifier program.
const programTimeout = 600 * time.Second

// runProgram runs the verifier program file_artifact_id (runner.md §7,
// ours): an executable or shebang script, or a Python file run with
// python3, with the env's MCP URL as its argument and in
// AGENTENV_MCP_URL. Its stdout is a JSON list of rows; "result" may be a
// bool or "passed"/"failed".
// auth, when set, is the Authorization value of the runner's verifier role
// on the gateway; it goes in the environment (argv is visible to ps).
func (c *Config) runProgram(ctx context.Context, rc *runner.RunContext, mcpURL, auth string) ([]runner.Row, error) {
	arts, err := rc.Services().ArtifactStore()
	if err != nil {
		return nil, err
	}
	r, f, err := arts.OpenFile(ctx, registry.Ref{ID: c.FileArtifactID, Version: c.FileArtifactVersion})
	if err != nil {
		return nil, fmt.Errorf("file_artifact_id %s: %w", c.FileArtifactID, err)
	}
	body, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agentenv-verifier-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	name := filepath.Base(f.Filename)
	if name == "." || name == "/" || name == "" {
		name = "verifier"
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, body, 0o700); err != nil {
		return nil, err
	}
	argv := []string{path, mcpURL}
	if strings.HasSuffix(name, ".py") {
		if py, err := exec.LookPath("python3"); err == nil {
			argv = []string{py, path, mcpURL}
		}
	}
	cctx, cancel := context.WithTimeout(ctx, programTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGENTENV_MCP_URL="+mcpURL)
	if auth != "" {
		cmd.Env = append(cmd.Env, "AGENTENV_MCP_AUTHORIZATION="+auth)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("verifier program %s: %w; stderr: %s", c.FileArtifactID, err, tail(stderr.String()))
	}
	var raw []map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &raw); err != nil {
		return nil, fmt.Errorf("verifier program %s: stdout is not a JSON list of rows: %v (%s)", c.FileArtifactID, err, tail(stdout.String()))
	}
	rows := make([]runner.Row, 0, len(raw))
	for i, m := range raw {
		switch v := m["result"].(type) {
		case bool:
		case string:
			m["result"] = v == "passed" || v == "pass" || v == "true" || v == "success"
		default:
			s, _ := m["score"].(float64)
			m["result"] = s >= 1
		}
		if _, ok := m["criterion_index"]; !ok {
			m["criterion_index"] = i
		}
		rows = append(rows, runner.Row(m))
	}
	return rows, nil
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 500 {
		s = "…" + s[len(s)-500:]
	}
	return s
}
