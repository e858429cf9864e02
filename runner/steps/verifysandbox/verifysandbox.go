// Package verifysandbox is the verify_sandbox step: file probes and shell
// commands run in a sandbox (or an agent's sandbox), scored by an
// aggregator into metadata.verifications[<verifier_id>].
package verifysandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// Type is the step type name.
const Type = "verify_sandbox"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields.
type Config struct {
	Criteria            []map[string]any  `json:"criteria"`
	AgentName           string            `json:"agent_name,omitempty"` // default-agent when no sandbox_name
	SandboxName         string            `json:"sandbox_name,omitempty"`
	BaseDir             string            `json:"base_dir,omitempty"`              // /app
	ShellTimeoutSeconds *float64          `json:"shell_timeout_seconds,omitempty"` // 120
	ScoreAggregator     runner.Aggregator `json:"score_aggregator,omitempty"`      // all_pass
	VerifierID          string            `json:"verifier_id,omitempty"`           // random hex
}

var (
	_ runner.Step      = (*Config)(nil)
	_ runner.Validator = (*Config)(nil)
)

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if len(c.Criteria) == 0 {
		return runner.Required("criteria")
	}
	if c.AgentName != "" && c.SandboxName != "" {
		return runner.Invalid("sandbox_name", "give agent_name or sandbox_name, not both")
	}
	if c.BaseDir != "" && !path.IsAbs(c.BaseDir) {
		return runner.Invalid("base_dir", "must be absolute, got %q", c.BaseDir)
	}
	if c.ShellTimeoutSeconds != nil && *c.ShellTimeoutSeconds <= 0 {
		return runner.Invalid("shell_timeout_seconds", "must be positive")
	}
	for i, cr := range c.Criteria {
		typ, _ := cr["type"].(string)
		if typ == "" {
			return runner.Invalid("criteria", "criterion %d lacks a type", i)
		}
		if err := checkCriterion(typ, cr); err != nil {
			return runner.Invalid("criteria", "criterion %d (%s): %v", i, typ, err)
		}
	}
	return nil
}

func checkCriterion(typ string, cr map[string]any) error {
	switch typ {
	case "probe_file_exists", "probe_dir_exists", "probe_file_contains":
		if len(paths(cr)) == 0 {
			return errors.New("paths must be a non-empty list of strings")
		}
		if typ == "probe_file_contains" {
			exp, hasExp := cr["expected"].(string)
			_, hasVal := cr["value"].(string)
			if !hasExp && !hasVal {
				return errors.New("expected (a regex) or value (a substring) is required")
			}
			if hasExp {
				if _, err := regexp.Compile(exp); err != nil {
					return fmt.Errorf("expected: %v", err)
				}
			}
		}
	case "bash_cmd_succeeds":
		if s, _ := cr["bash_cmd"].(string); strings.TrimSpace(s) == "" {
			return errors.New("bash_cmd is required")
		}
	}
	return nil
}

func paths(cr map[string]any) []string {
	l, _ := cr["paths"].([]any)
	var out []string
	for _, p := range l {
		if s, ok := p.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	if len(out) != len(l) {
		return nil
	}
	return out
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	sb, err := c.sandbox(ctx, rc)
	if err != nil {
		return err
	}
	base := c.BaseDir
	if base == "" {
		base = "/app"
	}
	timeout := 120 * time.Second
	if c.ShellTimeoutSeconds != nil {
		timeout = time.Duration(*c.ShellTimeoutSeconds * float64(time.Second))
	}
	rows := make([]runner.Row, 0, len(c.Criteria))
	for i, cr := range c.Criteria {
		row := runner.Row{}
		for k, v := range cr {
			row[k] = v
		}
		row["criterion_index"] = i
		result, skipped, why, err := c.check(ctx, sb, base, timeout, cr)
		if err != nil {
			return fmt.Errorf("criterion %d (%v): %w", i, cr["type"], err)
		}
		row["result"], row["skipped"], row["justification"] = result, skipped, why
		if result {
			row["score"] = 1.0
		} else {
			row["score"] = 0.0
		}
		rows = append(rows, row)
	}
	agg := c.ScoreAggregator.OrDefault()
	id := runner.VerifierIDOrNew(c.VerifierID)
	rc.SetVerification(id, runner.Verification{Score: agg.Aggregate(rows), Results: rows})
	return nil
}

func (c *Config) sandbox(ctx context.Context, rc *runner.RunContext) (sandbox.Sandbox, error) {
	if c.SandboxName != "" {
		_, sb, err := rc.Sandbox(ctx, c.SandboxName)
		if err != nil {
			return nil, fmt.Errorf("sandbox_name: %w", err)
		}
		return sb, nil
	}
	name := c.AgentName
	if name == "" {
		name = "default-agent"
	}
	id, err := rc.EntrySandboxID(runner.KeyDeployedAgents, "agent_name", name)
	if err != nil {
		return nil, fmt.Errorf("agent_name: %w", err)
	}
	return rc.SandboxByID(ctx, id)
}

// check evaluates one criterion. A probe that does not hold is a false
// result; err is only for a sandbox that cannot be used.
func (c *Config) check(ctx context.Context, sb sandbox.Sandbox, base string, timeout time.Duration, cr map[string]any) (result, skipped bool, why string, err error) {
	typ, _ := cr["type"].(string)
	abs := func(p string) string {
		if path.IsAbs(p) {
			return p
		}
		return path.Join(base, p)
	}
	switch typ {
	case "probe_file_exists", "probe_dir_exists":
		wantDir := typ == "probe_dir_exists"
		for _, p := range paths(cr) {
			fi, err := sb.Stat(ctx, abs(p))
			if errors.Is(err, fs.ErrNotExist) {
				return false, false, p + " does not exist", nil
			}
			if err != nil {
				return false, false, "", err
			}
			if fi.IsDir() != wantDir {
				kind := "a file"
				if wantDir {
					kind = "a folder"
				}
				return false, false, p + " is not " + kind, nil
			}
		}
		return true, false, "all paths exist", nil
	case "probe_file_contains":
		p := paths(cr)[0]
		b, err := sb.ReadFile(ctx, abs(p))
		if errors.Is(err, fs.ErrNotExist) {
			return false, false, p + " does not exist", nil
		}
		if err != nil {
			return false, false, "", err
		}
		if exp, ok := cr["expected"].(string); ok {
			if regexp.MustCompile(exp).Match(b) {
				return true, false, fmt.Sprintf("%s matches %q", p, exp), nil
			}
			return false, false, fmt.Sprintf("%s does not match %q", p, exp), nil
		}
		val, _ := cr["value"].(string)
		if strings.Contains(string(b), val) {
			return true, false, fmt.Sprintf("%s contains %q", p, val), nil
		}
		return false, false, fmt.Sprintf("%s does not contain %q", p, val), nil
	case "bash_cmd_succeeds":
		cmd, _ := cr["bash_cmd"].(string)
		tctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		res, err := sb.Exec(tctx, []string{"bash", "-c", "cd " + shellQuote(base) + " && (" + cmd + ")"}, nil)
		if err != nil {
			if ctx.Err() != nil {
				return false, false, "", ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return false, false, fmt.Sprintf("timed out after %s", timeout), nil
			}
			return false, false, "", err
		}
		if res.ExitCode == 0 {
			return true, false, "exit 0", nil
		}
		why := fmt.Sprintf("exit %d", res.ExitCode)
		if out := tail(res.Stderr, res.Stdout); out != "" {
			why += ": " + out
		}
		return false, false, why, nil
	}
	b, _ := json.Marshal(typ)
	return false, true, "criterion type " + string(b) + " is not checked by verify_sandbox", nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func tail(stderr, stdout []byte) string {
	b := stderr
	if len(strings.TrimSpace(string(b))) == 0 {
		b = stdout
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 500 {
		s = "…" + s[len(s)-500:]
	}
	return s
}
