package envoutcomeverifier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// waitDelay bounds the wait for a killed verifier's output pipes: a
// process it started may still hold them open.
const waitDelay = 5 * time.Second

// A verifier file (file_artifact_id) runs under one of two contracts,
// chosen by what the file is (isReference): the reference's Python
// verify(mcp_url) (python.go), or ours, a program that prints its rows.
const (
	contractReference = "reference contract (Python verify(mcp_url))"
	contractProgram   = "program contract (an executable printing a JSON list of rows)"
)

// fileAuth is what a verifier file may send to the env's gateway, as
// Authorization values; empty when the gateway has no control token.
// They go in the environment (argv is visible to ps).
type fileAuth struct {
	// mcp is the runner's verifier role credential: tool calls on /mcp
	// (AGENTENV_MCP_AUTHORIZATION), for both contracts.
	mcp string
	// control is the gateway's control token (the data plane and the
	// control routes; AGENTENV_CONTROL_AUTHORIZATION), for the reference
	// contract only: a reference verifier reads the env's data
	// (client.get_data), which the reference runs inside the harness
	// process that holds every secret. The shipped client sends it only to
	// the env's own origin and follows no redirect.
	control string
}

// runFile fetches the verifier file file_artifact_id and runs it under
// its contract against the env at mcpURL.
func (c *Config) runFile(ctx context.Context, rc *runner.RunContext, mcpURL string, auth fileAuth) ([]runner.Row, error) {
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
	cctx, cancel := context.WithTimeout(ctx, programTimeout)
	defer cancel()
	var rows []runner.Row
	contract := contractProgram
	why := ""
	if py, reason := isReference(name, body); py {
		contract = contractReference
		rows, err = runReference(cctx, dir, path, mcpURL, auth)
	} else {
		why = reason
		rows, err = runProgram(cctx, dir, path, mcpURL, auth.mcp)
	}
	if err != nil {
		if why != "" {
			why = " (" + why + ")"
		}
		return nil, fmt.Errorf("verifier %s, run under the %s%s: %w", c.FileArtifactID, contract, why, err)
	}
	return rows, nil
}

// runProgram runs the verifier program (ours): an
// executable or shebang script, or a Python file run with python3, with
// the env's MCP URL as its argument and in AGENTENV_MCP_URL (and auth in
// AGENTENV_MCP_AUTHORIZATION). Its stdout is a JSON list of rows.
func runProgram(ctx context.Context, dir, path, mcpURL, auth string) ([]runner.Row, error) {
	argv := []string{path, mcpURL}
	if strings.HasSuffix(path, ".py") {
		if py, err := exec.LookPath("python3"); err == nil {
			argv = []string{py, path, mcpURL}
		}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGENTENV_MCP_URL="+mcpURL)
	if auth != "" {
		cmd.Env = append(cmd.Env, "AGENTENV_MCP_AUTHORIZATION="+auth)
	}
	cmd.WaitDelay = waitDelay
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w; stderr: %s", err, tail(stderr.String()))
	}
	var raw []any
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &raw); err != nil {
		return nil, fmt.Errorf("stdout is not a JSON list of rows: %v (%s)", err, tail(stdout.String()))
	}
	return normaliseRows(raw)
}

// errRowShape is matched by every malformed-row error.
var errRowShape = errors.New("rows of the wrong shape")

// normaliseRows checks the rows a verifier returned and gives each a
// bool "result": a bool, or "passed"/"failed" (and the like) as text, or,
// when absent, score >= 1.
func normaliseRows(raw []any) ([]runner.Row, error) {
	rows := make([]runner.Row, 0, len(raw))
	for i, e := range raw {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: row %d is %s, want an object", errRowShape, i, jsonKind(e))
		}
		for _, k := range []string{"score", "weight"} {
			if v, ok := m[k]; ok && v != nil {
				if _, num := v.(float64); !num {
					return nil, fmt.Errorf("%w: row %d: %q is %s, want a number", errRowShape, i, k, jsonKind(v))
				}
			}
		}
		switch v := m["result"].(type) {
		case bool:
		case string:
			m["result"] = v == "passed" || v == "pass" || v == "true" || v == "success"
		case float64: // 1/0 as a number
			m["result"] = v >= 1
		case nil:
			s, ok := m["score"].(float64)
			if !ok {
				return nil, fmt.Errorf("%w: row %d has neither \"result\" nor a numeric \"score\"", errRowShape, i)
			}
			m["result"] = s >= 1
		default:
			return nil, fmt.Errorf("%w: row %d: \"result\" is %s, want a bool", errRowShape, i, jsonKind(v))
		}
		if _, ok := m["criterion_index"]; !ok {
			m["criterion_index"] = i
		}
		rows = append(rows, runner.Row(m))
	}
	return rows, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a bool"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 500 {
		s = "…" + s[len(s)-500:]
	}
	return s
}
