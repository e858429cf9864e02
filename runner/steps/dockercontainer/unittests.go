package dockercontainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
)

// TestsType is the run_container_unit_tests_verifier step type name.
const TestsType = "run_container_unit_tests_verifier"

// Defaults of the reference.
const (
	DefaultUser       = "root"
	DefaultTimeoutSec = 300
	// previewChars of stdout and stderr are kept on the verification;
	// the whole outputs are stored as file artifacts.
	previewChars = 500
	// timeoutExit is what a timed-out command records (timeout(1)'s).
	timeoutExit = 124
)

// TestsStepInfo registers run_container_unit_tests_verifier.
func TestsStepInfo() runner.StepInfo {
	return runner.StepInfo{Type: TestsType, New: func() runner.Step { return new(TestsConfig) }}
}

// TestsConfig is run_container_unit_tests_verifier's fields.
type TestsConfig struct {
	SandboxName   string            `json:"sandbox_name"`
	ContainerName string            `json:"container_name"`
	Command       string            `json:"command"`
	VerifierID    string            `json:"verifier_id,omitempty"` // the step id
	SetupCommands []string          `json:"setup_commands,omitempty"`
	User          string            `json:"user,omitempty"`        // root
	TimeoutSec    *float64          `json:"timeout_sec,omitempty"` // 300
	EnvVars       map[string]string `json:"env_vars,omitempty"`
	ResultPaths   []string          `json:"result_paths,omitempty"`
	RewardPath    string            `json:"reward_path,omitempty"`
}

var (
	_ runner.Step         = (*TestsConfig)(nil)
	_ runner.Validator    = (*TestsConfig)(nil)
	_ runner.EntityRefser = (*TestsConfig)(nil)
)

// EntityRefs implements runner.EntityRefser: the step names no stored
// entity.
func (c *TestsConfig) EntityRefs() []runner.EntityRef { return nil }

// envKey is a POSIX environment variable name; anything else could split
// the command.
var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate implements runner.Validator.
func (c *TestsConfig) Validate() error {
	switch {
	case c.SandboxName == "":
		return runner.Required("sandbox_name")
	case c.ContainerName == "":
		return runner.Required("container_name")
	case strings.TrimSpace(c.Command) == "":
		return runner.Required("command")
	}
	if c.TimeoutSec != nil && *c.TimeoutSec <= 0 {
		return runner.Invalid("timeout_sec", "must be positive")
	}
	for k := range c.EnvVars {
		if !envKey.MatchString(k) {
			return runner.Invalid("env_vars", "key %q is not a POSIX name ([A-Za-z_][A-Za-z0-9_]*)", k)
		}
	}
	for _, p := range c.ResultPaths {
		if !strings.HasPrefix(p, "/") {
			return runner.Invalid("result_paths", "%q must be an absolute path in the container", p)
		}
	}
	if c.RewardPath != "" && !strings.HasPrefix(c.RewardPath, "/") {
		return runner.Invalid("reward_path", "%q must be an absolute path in the container", c.RewardPath)
	}
	for i, s := range c.SetupCommands {
		if strings.TrimSpace(s) == "" {
			return runner.Invalid("setup_commands", "command %d is empty", i)
		}
	}
	return nil
}

func (c *TestsConfig) timeout() time.Duration {
	s := float64(DefaultTimeoutSec)
	if c.TimeoutSec != nil {
		s = *c.TimeoutSec
	}
	return time.Duration(s * float64(time.Second))
}

// Run implements runner.Step. The verification is recorded before a
// failed or timed-out command fails the step, so the run keeps its
// outputs either way.
func (c *TestsConfig) Run(ctx context.Context, rc *runner.RunContext) error {
	entry, err := containerEntry(rc, c.SandboxName, c.ContainerName)
	if err != nil {
		return fmt.Errorf("container_name: %w", err)
	}
	if _, _, err := sandboxOf(ctx, rc, c.SandboxName); err != nil {
		return err
	}
	p, err := engineOf(rc.Services())
	if err != nil {
		return err
	}
	id, _ := entry["container_id"].(string)
	if id == "" {
		id, _ = entry["docker_container_name"].(string)
	}
	user := c.User
	if user == "" || user == DefaultUser {
		// uid 0 by number: images without /etc/passwd (FROM scratch)
		// cannot resolve the name.
		user = "0"
	}
	command, env := c.resolve(rc)
	vid := c.VerifierID
	if vid == "" {
		vid = rc.StepID()
	}
	for i, setup := range c.SetupCommands {
		res, err := execIn(ctx, p, id, user, env, []string{"/bin/sh", "-c", setup})
		if err != nil {
			return fmt.Errorf("setup_commands[%d]: %w", i, err)
		}
		if res.exitCode != 0 {
			return fmt.Errorf("setup_commands[%d] exited %d: %s", i, res.exitCode, tail(string(res.stderr)+string(res.stdout), 1500))
		}
	}
	tctx, cancel := context.WithTimeout(ctx, c.timeout())
	res, err := execIn(tctx, p, id, user, env, []string{"/bin/sh", "-c", command})
	cancel()
	timedOut := false
	if err != nil {
		if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		timedOut, res = true, execResult{exitCode: timeoutExit, stderr: []byte(fmt.Sprintf("timed out after %s", c.timeout()))}
	}
	extracted := map[string]any{}
	paths := append([]string{}, c.ResultPaths...)
	if c.RewardPath != "" && !contains(paths, c.RewardPath) {
		paths = append(paths, c.RewardPath)
	}
	for _, rp := range paths {
		b, err := readFile(ctx, p, id, rp)
		if err != nil {
			rc.Logger().Warn("result file not extracted", "verifier_id", vid, "path", rp, "error", err)
			extracted[rp] = nil
			continue
		}
		var v any
		if json.Unmarshal(b, &v) == nil {
			extracted[rp] = v
		} else {
			extracted[rp] = string(b)
		}
	}
	stdoutRef, err := c.store(ctx, rc, vid, "stdout", res.stdout)
	if err != nil {
		return err
	}
	stderrRef, err := c.store(ctx, rc, vid, "stderr", res.stderr)
	if err != nil {
		return err
	}
	passed := res.exitCode == 0 && !timedOut
	row := runner.Row{"id": "exit_code", "message": fmt.Sprintf("exit_code=%d timed_out=%t", res.exitCode, timedOut)}
	score := 0.0
	if passed {
		score = 1
	}
	if c.RewardPath != "" {
		row["id"] = "reward"
		if r, ok := reward(extracted[c.RewardPath]); ok {
			score, passed = r, r >= 1
			row["message"] = fmt.Sprintf("reward=%g (exit_code=%d timed_out=%t)", r, res.exitCode, timedOut)
		} else {
			score, passed = 0, false
			row["message"] = fmt.Sprintf("reward file %q missing or not a number (exit_code=%d timed_out=%t)", c.RewardPath, res.exitCode, timedOut)
		}
	}
	row["score"], row["result"] = score, passed
	rc.SetVerification(vid, runner.Verification{Score: score, Results: []runner.Row{row}})
	// The reference's extra keys on the verification entry.
	rc.SetMetadataEntry("verifications", vid, map[string]any{
		"score": score, "results": []any{map[string]any(row)}, "command": command,
		"exit_code": res.exitCode, "timed_out": timedOut,
		"stdout_artifact": stdoutRef, "stderr_artifact": stderrRef,
		"stdout_head": head(res.stdout), "stderr_head": head(res.stderr),
		"extracted_files": extracted,
	})
	if timedOut {
		return fmt.Errorf("verifier %q timed out after %s", vid, c.timeout())
	}
	if res.exitCode != 0 && c.RewardPath == "" {
		return fmt.Errorf("verifier %q exited %d; stderr (tail): %s", vid, res.exitCode, tail(string(res.stderr), 1500))
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

func head(b []byte) string {
	s := string(b)
	if len(s) > previewChars {
		s = s[:previewChars]
	}
	return s
}

// reward reads a reward file's content as a score in 0..1.
func reward(v any) (float64, bool) {
	var f float64
	switch t := v.(type) {
	case float64:
		f = t
	case string:
		x, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if err != nil {
			return 0, false
		}
		f = x
	default:
		return 0, false
	}
	return min(1, max(0, f)), true
}

// resolve is the command and environment of this run: step_params may
// override command and add env_vars, and the seed's values reach the
// container as upper-cased variables (never spliced into the command
// unquoted: a <key> placeholder is replaced by the value single-quoted).
func (c *TestsConfig) resolve(rc *runner.RunContext) (string, map[string]string) {
	command := c.Command
	env := map[string]string{}
	params := rc.StepParams()
	if s, ok := params["command"].(string); ok && s != "" {
		command = s
	}
	seed := rc.Seed()
	if len(seed) > 0 {
		command = placeholders(command, seed)
		for k, v := range seed {
			ek := strings.ToUpper(k)
			if envKey.MatchString(ek) && ek != "PATH" && ek != "HOME" {
				env[ek] = v
			}
		}
	}
	for k, v := range c.EnvVars {
		env[k] = v
	}
	if m, ok := params["env_vars"].(map[string]any); ok {
		for k, v := range m {
			if envKey.MatchString(k) {
				env[k] = fmt.Sprint(v)
			}
		}
	}
	return command, env
}

// placeholders replaces each <key> of seed in one left-to-right pass, so
// a value is never scanned again.
func placeholders(s string, seed map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '<' {
			if j := strings.IndexByte(s[i:], '>'); j > 0 {
				if v, ok := seed[s[i+1:i+j]]; ok {
					b.WriteString("'" + strings.ReplaceAll(v, "'", `'\''`) + "'")
					i += j + 1
					continue
				}
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// store keeps one output as a file artifact of the run and returns its
// reference for the verification.
func (c *TestsConfig) store(ctx context.Context, rc *runner.RunContext, vid, which string, b []byte) (map[string]any, error) {
	arts, err := rc.Services().ArtifactStore()
	if err != nil {
		return nil, fmt.Errorf("store the %s of %s: %w", which, vid, err)
	}
	inst, _ := rc.Metadata("instance_id")
	id := fmt.Sprintf("%v/verifier-%s-%s-%d-%s", inst, which, rc.StepID(), time.Now().Unix(), runner.RandomHex(6))
	if s, _ := inst.(string); s == "" {
		id = strings.TrimPrefix(id, "<nil>/")
	}
	f, err := arts.PutFile(ctx, id, artifact.FileInput{Filename: which + ".txt",
		Description: which + " of " + vid + " from step " + rc.StepID(), Body: strings.NewReader(string(b))})
	if err != nil {
		return nil, fmt.Errorf("store the %s of %s: %w", which, vid, err)
	}
	return map[string]any{"id": f.ID, "version": f.Version, "s3_url": f.S3URL}, nil
}
