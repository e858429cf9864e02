package runcode

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// Type is the step type name.
const Type = "run_code"

// Defaults and limits of the reference.
const (
	DefaultEntrypoint     = "run"
	DefaultTimeoutSeconds = 600
	// EntryWhenAmbiguous is the entry of a universe with several .py files.
	EntryWhenAmbiguous = "run.py"
	maxOutputBytes     = 50 << 20
	maxScriptBytes     = 5 << 20
	// runRoot is where a run's files are staged in the sandbox; each run
	// gets a fresh folder under it, so a retried step never reads a stale
	// result.
	runRoot = "/tmp/agent_env_run_code"
	// stagedScript is where a single-file Python artifact is staged,
	// whatever its file name.
	stagedScript = "script.py"
)

// reserved are the staging files a member may not shadow.
var reserved = map[string]bool{"runner.py": true, "input.json": true, "output.json": true}

//go:embed runner.py
var bootstrap []byte

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields.
type Config struct {
	ScriptArtifactID      string         `json:"script_artifact_id"`
	ScriptArtifactVersion int            `json:"script_artifact_version,omitempty"`
	ScriptFile            string         `json:"script_file,omitempty"` // universe entry: the sole .py, else run.py
	Entrypoint            string         `json:"entrypoint,omitempty"`  // run
	Args                  map[string]any `json:"args,omitempty"`
	ResultID              string         `json:"result_id,omitempty"`       // the step id
	TimeoutSeconds        *float64       `json:"timeout_seconds,omitempty"` // 600
	EnvID                 string         `json:"env_id,omitempty"`
	AgentName             string         `json:"agent_name,omitempty"` // default-agent
	// SandboxName runs the script in a deploy_sandbox sandbox. Ours.
	SandboxName string `json:"sandbox_name,omitempty"`
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
	_ runner.Preflighter  = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.ArtifactRef("script_artifact_id", "script_artifact_version"), runner.EnvRef("env_id")}
}

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.ScriptArtifactID == "" {
		return runner.Required("script_artifact_id")
	}
	if c.ScriptArtifactVersion < 0 {
		return runner.Invalid("script_artifact_version", "must be >= 1")
	}
	targets := 0
	for _, s := range []string{c.EnvID, c.AgentName, c.SandboxName} {
		if s != "" {
			targets++
		}
	}
	if targets > 1 {
		return runner.Invalid("env_id", "give one of env_id, agent_name and sandbox_name")
	}
	if c.TimeoutSeconds != nil && *c.TimeoutSeconds <= 0 {
		return runner.Invalid("timeout_seconds", "must be positive")
	}
	if c.ScriptFile != "" && !safeMember(c.ScriptFile) {
		return runner.Invalid("script_file", "must be a relative path inside the artifact, got %q", c.ScriptFile)
	}
	if c.Entrypoint != "" && !isIdentifier(c.Entrypoint) {
		return runner.Invalid("entrypoint", "must be a function name, got %q", c.Entrypoint)
	}
	return nil
}

func isIdentifier(s string) bool {
	for i, r := range s {
		if r != '_' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && !(i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

func safeMember(name string) bool {
	if name == "" || strings.HasPrefix(name, "/") || strings.HasPrefix(name, "~") {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return false
		}
	}
	return true
}

// Preflight implements runner.Preflighter: the script artifact resolves
// to an entry (the documents only, never the bytes).
func (c *Config) Preflight(ctx context.Context, s *runner.Services) []error {
	if s == nil || s.Documents == nil {
		return nil
	}
	if _, err := c.resolve(ctx, s); err != nil && !errors.Is(err, registry.ErrNotFound) {
		return []error{&runner.FieldError{Field: "script_artifact_id", Msg: err.Error()}}
	}
	return nil // a missing artifact is reported by the entity-reference preflight
}

// script is the resolved script artifact.
type script struct {
	entry   string                  // staged entry path, relative to the run folder
	python  bool                    // the Python contract
	file    *artifact.File          // a single-file artifact
	members map[string]registry.Ref // a universe's members to stage
}

func (c *Config) ref() registry.Ref {
	return registry.Ref{ID: c.ScriptArtifactID, Version: c.ScriptArtifactVersion}
}

func (c *Config) resolve(ctx context.Context, s *runner.Services) (*script, error) {
	arts, err := s.ArtifactStore()
	if err != nil {
		return nil, err
	}
	doc, err := s.Documents.Get(ctx, registry.Artifacts, c.ref())
	if err != nil {
		return nil, err
	}
	if doc.Type != artifact.TypeFileArtifactUniverse {
		f, err := arts.GetFile(ctx, c.ref())
		if err != nil {
			return nil, fmt.Errorf("script_artifact_id %s must be a file or a file_artifact_universe artifact: %w", c.ScriptArtifactID, err)
		}
		if c.ScriptFile != "" {
			return nil, fmt.Errorf("script_file %q is set but %s is a single-file artifact; drop script_file or use a file_artifact_universe", c.ScriptFile, c.ScriptArtifactID)
		}
		if strings.HasSuffix(f.Filename, ".py") {
			return &script{entry: stagedScript, python: true, file: f}, nil
		}
		name := path.Base(f.Filename)
		if reserved[name] || name == "." || name == "/" {
			name = "program"
		}
		return &script{entry: name, file: f}, nil
	}
	u, err := arts.GetUniverse(ctx, c.ref())
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(u.FileArtifactRefs))
	for n := range u.FileArtifactRefs {
		if !safeMember(n) {
			return nil, fmt.Errorf("script_artifact_id %s has a member %q that is absolute or leaves the staging folder", c.ScriptArtifactID, n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("script_artifact_id %s is an empty file_artifact_universe", c.ScriptArtifactID)
	}
	var py []string
	for _, n := range names {
		if strings.HasSuffix(n, ".py") {
			if reserved[n] {
				return nil, fmt.Errorf("script_artifact_id %s has a member %q that would shadow run_code's staging files; rename it", c.ScriptArtifactID, n)
			}
			py = append(py, n)
		}
	}
	entry := c.ScriptFile
	switch {
	case entry != "":
		if _, ok := u.FileArtifactRefs[entry]; !ok {
			return nil, fmt.Errorf("script_file %q is not a member of %s (members: %s)", entry, c.ScriptArtifactID, strings.Join(names, ", "))
		}
	case len(py) == 1:
		entry = py[0]
	case len(py) == 0:
		return nil, fmt.Errorf("script_artifact_id %s has no .py member; set script_file to its program (members: %s)", c.ScriptArtifactID, strings.Join(names, ", "))
	default:
		var def []string
		for _, n := range py {
			if path.Base(n) == EntryWhenAmbiguous {
				def = append(def, n)
			}
		}
		if len(def) != 1 {
			return nil, fmt.Errorf("script_artifact_id %s has %d .py members and %d named %s; set script_file to one of %s",
				c.ScriptArtifactID, len(py), len(def), EntryWhenAmbiguous, strings.Join(py, ", "))
		}
		entry = def[0]
	}
	sc := &script{entry: entry, python: strings.HasSuffix(entry, ".py"), members: map[string]registry.Ref{}}
	for _, n := range names {
		if !sc.python || strings.HasSuffix(n, ".py") {
			sc.members[n] = u.FileArtifactRefs[n]
		}
	}
	return sc, nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	svc := rc.Services()
	if svc.Documents == nil {
		return fmt.Errorf("run_code needs the document store: %w", runner.ErrNoStore)
	}
	sc, err := c.resolve(ctx, svc)
	if err != nil {
		return fmt.Errorf("script_artifact_id: %w", err)
	}
	files, err := c.load(ctx, svc, sc)
	if err != nil {
		return err
	}
	sb, where, err := c.target(ctx, rc)
	if err != nil {
		return err
	}
	results, _ := rc.Metadata("script_results")
	if results == nil {
		results = map[string]any{}
	}
	args := c.Args
	if args == nil {
		args = map[string]any{}
	}
	input, err := json.Marshal(map[string]any{"args": args, "results": results})
	if err != nil {
		return fmt.Errorf("args: %w", err)
	}
	dir := runRoot + "/" + rc.StepID() + "-" + runner.RandomHex(4)
	result, err := c.execute(ctx, sb, dir, sc, files, input)
	if errors.Is(err, sandbox.ErrNotSupported) {
		return fmt.Errorf("run_code %s (%s): %w; run it in a deploy_sandbox sandbox with sandbox_name", sc.entry, where, err)
	}
	if err != nil {
		return fmt.Errorf("run_code %s (%s): %w", sc.entry, where, err)
	}
	id := c.ResultID
	if id == "" {
		id = rc.StepID()
	}
	rc.SetMetadataEntry("script_results", id, result)
	rc.Logger().Info("run_code completed", "result_id", id, "target", where)
	return nil
}

// load reads the files to stage: name (relative to the run folder) →
// bytes, within the staging cap.
func (c *Config) load(ctx context.Context, svc *runner.Services, sc *script) (map[string][]byte, error) {
	arts, err := svc.ArtifactStore()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "agentenv-run-code-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := map[string][]byte{}
	total := 0
	add := func(name, p string) error {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		total += len(b)
		if total > maxScriptBytes {
			return fmt.Errorf("script_artifact_id %s: the staged files pass the %d-byte cap", c.ScriptArtifactID, maxScriptBytes)
		}
		out[name] = b
		return nil
	}
	if sc.file != nil {
		p, err := arts.WriteFile(ctx, sc.file.Ref(), tmp)
		if err != nil {
			return nil, fmt.Errorf("script_artifact_id %s: %w", c.ScriptArtifactID, err)
		}
		return out, add(sc.entry, p)
	}
	names := make([]string, 0, len(sc.members))
	for n := range sc.members {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		f, err := arts.GetFile(ctx, sc.members[n])
		if err != nil {
			return nil, fmt.Errorf("script_artifact_id %s member %s: %w", c.ScriptArtifactID, n, err)
		}
		// Each member in a folder of its own: WriteFile names the file
		// after the member's own filename.
		sub := filepath.Join(tmp, fmt.Sprint(i))
		p, err := arts.WriteFile(ctx, f.Ref(), sub)
		if err != nil {
			return nil, fmt.Errorf("script_artifact_id %s member %s: %w", c.ScriptArtifactID, n, err)
		}
		if err := add(n, p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// target is the sandbox the script runs in, and words for messages.
func (c *Config) target(ctx context.Context, rc *runner.RunContext) (sandbox.Sandbox, string, error) {
	if c.SandboxName != "" {
		_, sb, err := rc.Sandbox(ctx, c.SandboxName)
		if err != nil {
			return nil, "", fmt.Errorf("sandbox_name: %w", err)
		}
		return sb, "sandbox " + c.SandboxName, nil
	}
	if c.EnvID != "" {
		id, err := rc.EntrySandboxID(runner.KeyDeployedEnvs, "env_id", c.EnvID)
		if err != nil {
			return nil, "", fmt.Errorf("env_id: %w", err)
		}
		sb, err := rc.SandboxByID(ctx, id)
		if err != nil {
			return nil, "", fmt.Errorf("env_id: %w", err)
		}
		return sb, "host of env " + c.EnvID, nil
	}
	name := c.AgentName
	if name == "" {
		name = "default-agent"
	}
	id, err := rc.EntrySandboxID(runner.KeyDeployedAgents, "agent_name", name)
	if err != nil {
		return nil, "", fmt.Errorf("agent_name: %w", err)
	}
	sb, err := rc.SandboxByID(ctx, id)
	if err != nil {
		return nil, "", fmt.Errorf("agent_name: %w", err)
	}
	return sb, "sandbox of agent " + name, nil
}

func (c *Config) timeout() time.Duration {
	s := float64(DefaultTimeoutSeconds)
	if c.TimeoutSeconds != nil {
		s = *c.TimeoutSeconds
	}
	return time.Duration(s * float64(time.Second))
}

// execute stages the files in dir and runs the entry under its contract.
func (c *Config) execute(ctx context.Context, sb sandbox.Sandbox, dir string, sc *script, files map[string][]byte, input []byte) (any, error) {
	entrypoint := c.Entrypoint
	if entrypoint == "" {
		entrypoint = DefaultEntrypoint
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		perm := os.FileMode(0o644)
		if n == sc.entry && !sc.python {
			perm = 0o755
		}
		if err := sb.WriteFile(ctx, dir+"/"+n, bytes.NewReader(files[n]), perm); err != nil {
			return nil, fmt.Errorf("stage %s: %w", n, err)
		}
	}
	var argv []string
	opts := &sandbox.ExecOptions{Dir: dir, Env: map[string]string{"AGENTENV_WORKSPACE": workspace(sb)}}
	if sc.python {
		for n, b := range map[string][]byte{"runner.py": bootstrap, "input.json": input} {
			if err := sb.WriteFile(ctx, dir+"/"+n, bytes.NewReader(b), 0o644); err != nil {
				return nil, fmt.Errorf("stage %s: %w", n, err)
			}
		}
		argv = []string{"python3", "runner.py", ".", entrypoint, sc.entry}
	} else {
		argv = []string{"./" + sc.entry, entrypoint}
		opts.Stdin = bytes.NewReader(input)
	}
	tctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	res, err := sb.Exec(tctx, argv, opts)
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("timed out after %s", c.timeout())
		}
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("exited %d: %s", res.ExitCode, head(res.Stderr, res.Stdout))
	}
	out := res.Stdout
	if sc.python {
		fi, err := sb.Stat(ctx, dir+"/output.json")
		if err != nil {
			return nil, fmt.Errorf("wrote no result: %w", err)
		}
		if fi.Size() > maxOutputBytes {
			return nil, fmt.Errorf("the result passes the %d-byte cap", maxOutputBytes)
		}
		if out, err = sb.ReadFile(ctx, dir+"/output.json"); err != nil {
			return nil, fmt.Errorf("read the result: %w", err)
		}
	} else if len(out) > maxOutputBytes {
		return nil, fmt.Errorf("the result passes the %d-byte cap", maxOutputBytes)
	}
	var v any
	if err := json.Unmarshal(bytes.TrimSpace(out), &v); err != nil {
		return nil, fmt.Errorf("the result is not JSON: %v (%s)", err, head(nil, out))
	}
	return v, nil
}

// workspace is where the script finds the sandbox's /app: the host
// folder of a local work-folder sandbox (its commands run on this machine,
// where /app is that folder), else /app.
func workspace(sb sandbox.Sandbox) string {
	if hp, ok := sb.(interface{ HostPath(string) (string, error) }); ok {
		if p, err := hp.HostPath("/app"); err == nil {
			return p
		}
	}
	return "/app"
}

// head is the start of stderr, or of stdout when stderr is empty, bounded
// for an error message.
func head(stderr, stdout []byte) string {
	b := stderr
	if len(bytes.TrimSpace(b)) == 0 {
		b = stdout
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 1000 {
		s = s[:1000] + "…"
	}
	return s
}
