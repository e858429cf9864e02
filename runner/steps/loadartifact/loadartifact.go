// Package loadartifact is the load_artifact step: copy the files of stored
// artifacts (file, file_artifact_universe) or of URLs into a sandbox of the
// run.
//
// It loads into sandboxes (sandbox_name, and the host sandbox of a
// deployed agent or env by agent_name / env_id), and environment artifacts
// and universes into a running env through each backing server's data
// plane behind the gateway (env.go). container_name targets come with the
// Docker steps.
package loadartifact

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// Type is the step type name.
const Type = "load_artifact"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// ArtifactRef is one {id, version} of "artifacts".
type ArtifactRef struct {
	ID      string `json:"id"`
	Version *int   `json:"version,omitempty"`
}

// URLSource is one "urls" entry: a string or {url, filename}.
type URLSource struct {
	URL      string `json:"url"`
	Filename string `json:"filename,omitempty"`
}

// UnmarshalJSON accepts a bare string.
func (u *URLSource) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		u.URL = s
		return nil
	}
	type plain URLSource
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("a url entry is a string or {url, filename}")
	}
	*u = URLSource(p)
	return nil
}

// Config is the step's fields.
type Config struct {
	ArtifactID         string        `json:"artifact_id,omitempty"`
	ArtifactVersion    *int          `json:"artifact_version,omitempty"`
	Artifacts          []ArtifactRef `json:"artifacts,omitempty"`
	URLs               []URLSource   `json:"urls,omitempty"`
	ArtifactFromStepID string        `json:"artifact_from_step_id,omitempty"`
	// CollectedArtifactsStepID is the reference's older name of
	// artifact_from_step_id, still found in stored tasks.
	CollectedArtifactsStepID string `json:"collected_artifacts_step_id,omitempty"`

	EnvID         string `json:"env_id,omitempty"`
	EnvStepID     string `json:"env_step_id,omitempty"`
	AgentName     string `json:"agent_name,omitempty"`
	SandboxName   string `json:"sandbox_name,omitempty"`
	ContainerName string `json:"container_name,omitempty"`

	DestinationPath   string `json:"destination_path,omitempty"`
	SnapshotAfterLoad bool   `json:"snapshot_after_load,omitempty"`
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{
		{Field: "artifact_id", Collection: string(registry.Artifacts), VersionField: "artifact_version"},
		{Field: "artifacts", Collection: string(registry.Artifacts), List: true, ListKey: "id", VersionField: "version"},
		{Field: "env_id", Collection: string(registry.Envs)},
	}
}

// Validate implements runner.Validator: exactly one source and one target.
func (c *Config) Validate() error {
	sources := 0
	for _, set := range []bool{c.ArtifactID != "", len(c.Artifacts) > 0, len(c.URLs) > 0, c.fromStep() != ""} {
		if set {
			sources++
		}
	}
	if sources == 0 {
		return runner.Invalid("artifact_id", "a source is required: artifact_id, artifacts, urls or artifact_from_step_id")
	}
	if sources > 1 {
		return runner.Invalid("artifact_id", "give exactly one of artifact_id, artifacts, urls, artifact_from_step_id")
	}
	if c.ArtifactFromStepID != "" && c.CollectedArtifactsStepID != "" {
		return runner.Invalid("collected_artifacts_step_id", "is the older name of artifact_from_step_id; give one")
	}
	if c.ArtifactVersion != nil && c.ArtifactID == "" {
		return runner.Invalid("artifact_version", "needs artifact_id")
	}
	if c.SnapshotAfterLoad {
		// Refused rather than ignored: a task asking for a snapshot must
		// not pass without one.
		return runner.Invalid("snapshot_after_load", "is not supported yet by load_artifact; run snapshot_env after it instead")
	}
	for i, a := range c.Artifacts {
		if a.ID == "" {
			return runner.Invalid("artifacts", "entry %d lacks id", i)
		}
	}
	for i, u := range c.URLs {
		if err := checkURL(u.URL); err != nil {
			return runner.Invalid("urls", "entry %d: %v", i, err)
		}
	}
	targets := 0
	for _, set := range []bool{c.EnvID != "", c.AgentName != "", c.SandboxName != ""} {
		if set {
			targets++
		}
	}
	if targets == 0 {
		return runner.Invalid("sandbox_name", "a target is required: env_id, agent_name or sandbox_name")
	}
	if targets > 1 {
		return runner.Invalid("sandbox_name", "give exactly one of env_id, agent_name, sandbox_name")
	}
	if c.ContainerName != "" && c.SandboxName == "" {
		return runner.Invalid("container_name", "needs sandbox_name")
	}
	if c.DestinationPath != "" && !path.IsAbs(c.DestinationPath) {
		return runner.Invalid("destination_path", "must be an absolute path, got %q", c.DestinationPath)
	}
	return nil
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", raw)
	}
	return nil
}

func (c *Config) fromStep() string {
	if c.ArtifactFromStepID != "" {
		return c.ArtifactFromStepID
	}
	return c.CollectedArtifactsStepID
}

// stepArtifact is the artifact an earlier step recorded under its step id:
// collect_artifacts in metadata.collected_artifacts, or
// snapshot_env in metadata.env_snapshotted_universes. It is nil when that
// step ran and produced nothing, and an error when no step recorded one
// under that id (a wrong id, or the producer has not run).
func stepArtifact(rc *runner.RunContext, step string) (*registry.Ref, error) {
	for _, key := range []string{"collected_artifacts", "env_snapshotted_universes"} {
		v, _ := rc.Metadata(key)
		m, _ := v.(map[string]any)
		entry, ok := m[step]
		if !ok {
			continue
		}
		e, _ := entry.(map[string]any)
		if u, ok := e["file_artifact_universe"]; ok { // the reference's collect_artifacts shape
			e, _ = u.(map[string]any)
		}
		id, _ := e["id"].(string)
		if id == "" {
			return nil, nil
		}
		ref := &registry.Ref{ID: id}
		if n, ok := e["version"].(float64); ok {
			ref.Version = int(n)
		}
		return ref, nil
	}
	return nil, fmt.Errorf("artifact_from_step_id: no artifact recorded by step %q; a step that produces one (collect_artifacts, snapshot_env) must run with that id before this load", step)
}

func (c *Config) refs() []registry.Ref {
	var out []registry.Ref
	if c.ArtifactID != "" {
		r := registry.Ref{ID: c.ArtifactID}
		if c.ArtifactVersion != nil {
			r.Version = *c.ArtifactVersion
		}
		out = append(out, r)
	}
	for _, a := range c.Artifacts {
		r := registry.Ref{ID: a.ID}
		if a.Version != nil {
			r.Version = *a.Version
		}
		out = append(out, r)
	}
	return out
}

// withStepParams applies user_overrides.step_params (artifacts,
// artifact_id, urls, destination_path).
func (c *Config) withStepParams(p map[string]any) (*Config, error) {
	if len(p) == 0 {
		return c, nil
	}
	cp := *c
	for k, v := range p {
		b, _ := json.Marshal(v)
		var err error
		switch k {
		case "artifacts":
			cp.ArtifactID, cp.ArtifactVersion, cp.URLs = "", nil, nil
			cp.ArtifactFromStepID, cp.CollectedArtifactsStepID = "", ""
			err = json.Unmarshal(b, &cp.Artifacts)
		case "artifact_id":
			cp.Artifacts, cp.URLs, cp.ArtifactVersion = nil, nil, nil
			cp.ArtifactFromStepID, cp.CollectedArtifactsStepID = "", ""
			err = json.Unmarshal(b, &cp.ArtifactID)
		case "urls":
			cp.ArtifactID, cp.ArtifactVersion, cp.Artifacts = "", nil, nil
			cp.ArtifactFromStepID, cp.CollectedArtifactsStepID = "", ""
			err = json.Unmarshal(b, &cp.URLs)
		case "destination_path":
			err = json.Unmarshal(b, &cp.DestinationPath)
		default:
			err = fmt.Errorf("load_artifact does not take step_params %q", k)
		}
		if err != nil {
			return nil, fmt.Errorf("user_overrides.step_params: %s: %w", k, err)
		}
	}
	return &cp, cp.Validate()
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	c, err := c.withStepParams(rc.StepParams())
	if err != nil {
		return err
	}
	if c.ContainerName != "" {
		return fmt.Errorf("container_name %q: loading into a container needs the Docker provider: %w", c.ContainerName, sandbox.ErrNotSupported)
	}
	if step := c.fromStep(); step != "" {
		ref, err := stepArtifact(rc, step)
		if err != nil {
			return err
		}
		if ref == nil {
			rc.Logger().Warn("load_artifact: the named step produced no artifact; nothing to load", "artifact_from_step_id", step)
			return nil
		}
		cp := *c
		cp.ArtifactFromStepID, cp.CollectedArtifactsStepID = "", ""
		v := ref.Version
		cp.Artifacts = []ArtifactRef{{ID: ref.ID, Version: &v}}
		c = &cp
	}
	if c.EnvID != "" && len(c.URLs) == 0 {
		if handled, err := c.loadIntoEnv(ctx, rc); handled || err != nil {
			return err
		}
	}
	sb, dest, err := c.target(ctx, rc)
	if err != nil {
		return err
	}
	s := rc.Services()
	if len(c.URLs) > 0 {
		return c.loadURLs(ctx, rc, sb, dest)
	}
	arts, err := s.ArtifactStore()
	if err != nil {
		return fmt.Errorf("load_artifact: %w", err)
	}
	for _, ref := range c.refs() {
		d, err := arts.Get(ctx, ref)
		if err != nil {
			return err
		}
		if d.Type == artifact.TypeCLI {
			if err := c.installCLI(ctx, rc, arts, d.Ref(), sb); err != nil {
				return err
			}
			continue
		}
		entry, err := loadArtifact(ctx, arts, ref, sb, dest)
		if err != nil {
			return err
		}
		entry["sandbox_id"] = sb.ID()
		entry["step_id"] = rc.StepID()
		if c.SandboxName == "" && c.AgentName != "" {
			entry["agent_name"] = c.AgentName // add_skills finds the files an agent was given
		}
		rc.AppendMetadata("loaded_file_artifact_universes", entry)
	}
	return nil
}

func (c *Config) target(ctx context.Context, rc *runner.RunContext) (sandbox.Sandbox, string, error) {
	dest := c.DestinationPath
	switch {
	case c.SandboxName != "":
		_, sb, err := rc.Sandbox(ctx, c.SandboxName)
		if err != nil {
			return nil, "", fmt.Errorf("sandbox_name: %w", err)
		}
		if dest == "" {
			dest = "/loaded"
		}
		return sb, dest, nil
	case c.AgentName != "":
		id, err := rc.EntrySandboxID(runner.KeyDeployedAgents, "agent_name", c.AgentName)
		if err != nil {
			return nil, "", fmt.Errorf("agent_name: %w", err)
		}
		sb, err := rc.SandboxByID(ctx, id)
		if err != nil {
			return nil, "", fmt.Errorf("agent_name %q: %w", c.AgentName, err)
		}
		if dest == "" {
			dest = "/tmp/file_artifacts"
		}
		return sb, dest, nil
	default:
		id, err := rc.EntrySandboxID(runner.KeyDeployedEnvs, "env_id", c.EnvID)
		if err != nil {
			return nil, "", fmt.Errorf("env_id: %w", err)
		}
		sb, err := rc.SandboxByID(ctx, id)
		if err != nil {
			return nil, "", fmt.Errorf("env_id %q: %w", c.EnvID, err)
		}
		if dest == "" {
			dest = "/tmp/file_artifacts"
		}
		return sb, dest, nil
	}
}

func loadArtifact(ctx context.Context, arts *artifact.Store, ref registry.Ref, sb sandbox.Sandbox, dest string) (map[string]any, error) {
	d, err := arts.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	pinned := d.Ref()
	var files []string
	switch d.Type {
	case artifact.TypeFile:
		f, err := copyFile(ctx, arts, pinned, sb, dest, "")
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	case artifact.TypeFileArtifactUniverse:
		u, err := arts.GetUniverse(ctx, pinned)
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(u.FileArtifactRefs))
		for name := range u.FileArtifactRefs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if _, err := copyFile(ctx, arts, u.FileArtifactRefs[name], sb, dest, name); err != nil {
				return nil, fmt.Errorf("artifact %s member %q: %w", pinned, name, err)
			}
			files = append(files, name)
		}
	default:
		return nil, fmt.Errorf("artifact %s is of type %q; into a sandbox this build loads file and file_artifact_universe artifacts", pinned, d.Type)
	}
	return map[string]any{"id": d.ID, "version": d.Version, "type": d.Type, "destination_path": dest, "files": files}, nil
}

// CLIDir is where a cli artifact is installed when destination_path is
// not given: <CLIDir>/<command name>/ holds its files. It is under /app,
// the work folder every sandbox kind maps (the local sandbox runs
// /app paths from its host folder).
const CLIDir = "/app/.agentenv/clis"

// installCLI writes a cli artifact's files into the sandbox (its
// entrypoint executable) and, for an agent, records
// metadata.installed_clis[<agent>][<cli id>] = {command_name,
// install_path, version}: what add_skills' cli_artifact_ids point the
// agent at.
func (c *Config) installCLI(ctx context.Context, rc *runner.RunContext, arts *artifact.Store, ref registry.Ref, sb sandbox.Sandbox) error {
	cli, err := arts.GetCLI(ctx, ref)
	if err != nil {
		return err
	}
	files := registry.Ref{ID: cli.CLIFilesID}
	if cli.CLIFilesRef != nil {
		files = *cli.CLIFilesRef
	}
	u, err := arts.GetUniverse(ctx, files)
	if err != nil {
		return fmt.Errorf("cli %s: %w", cli.Ref(), err)
	}
	dest := c.DestinationPath
	if dest == "" {
		dest = path.Join(CLIDir, cli.CommandName)
	}
	names := make([]string, 0, len(u.FileArtifactRefs))
	for name := range u.FileArtifactRefs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		mode := os.FileMode(0o644)
		if name == cli.Entrypoint {
			mode = 0o755
		}
		if _, err := copyFileMode(ctx, arts, u.FileArtifactRefs[name], sb, dest, name, mode); err != nil {
			return fmt.Errorf("cli %s member %q: %w", cli.Ref(), name, err)
		}
	}
	install := path.Join(dest, cli.Entrypoint)
	entry := map[string]any{"command_name": cli.CommandName, "install_path": install, "version": cli.Version,
		"sandbox_id": sb.ID(), "step_id": rc.StepID()}
	if c.SandboxName == "" && c.AgentName != "" {
		rc.SetMetadataEntry("installed_clis", c.AgentName, mergeCLI(rc, c.AgentName, cli.ID, entry))
	}
	rc.Logger().Info("cli installed", "cli", cli.Ref().String(), "install_path", install, "agent_name", c.AgentName)
	return nil
}

// mergeCLI is the agent's installed_clis map with id set to entry.
func mergeCLI(rc *runner.RunContext, agent, id string, entry map[string]any) map[string]any {
	out := map[string]any{}
	if v, ok := rc.Metadata("installed_clis"); ok {
		all, _ := v.(map[string]any)
		if m, ok := all[agent].(map[string]any); ok {
			for k, e := range m {
				out[k] = e
			}
		}
	}
	out[id] = entry
	return out
}

// copyFile writes one file artifact to dest/<name> (name "" = its own
// filename) in the sandbox and returns the name used.
func copyFile(ctx context.Context, arts *artifact.Store, ref registry.Ref, sb sandbox.Sandbox, dest, name string) (string, error) {
	return copyFileMode(ctx, arts, ref, sb, dest, name, 0o644)
}

// copyFileMode is copyFile with the file's mode.
func copyFileMode(ctx context.Context, arts *artifact.Store, ref registry.Ref, sb sandbox.Sandbox, dest, name string, mode os.FileMode) (string, error) {
	r, f, err := arts.OpenFile(ctx, ref)
	if err != nil {
		return "", err
	}
	defer r.Close()
	if name == "" {
		name = f.Filename
	}
	clean := path.Clean("/" + name)
	if clean == "/" || strings.Contains(name, "..") {
		return "", fmt.Errorf("file artifact %s: filename %q escapes the destination", f.Ref(), name)
	}
	to := path.Join(dest, clean)
	if err := sb.WriteFile(ctx, to, r, mode); err != nil {
		return "", fmt.Errorf("file artifact %s into %s: %w", f.Ref(), to, err)
	}
	return name, nil
}

func (c *Config) loadURLs(ctx context.Context, rc *runner.RunContext, sb sandbox.Sandbox, dest string) error {
	for _, u := range c.URLs {
		name := u.Filename
		if name == "" {
			pu, _ := url.Parse(u.URL)
			name = path.Base(pu.Path)
			if name == "" || name == "/" || name == "." {
				name = "download"
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.URL, nil)
		if err != nil {
			return fmt.Errorf("urls: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("urls: %w", err)
		}
		if resp.StatusCode >= 300 {
			resp.Body.Close()
			return fmt.Errorf("urls: GET %s: HTTP %d", u.URL, resp.StatusCode)
		}
		err = sb.WriteFile(ctx, path.Join(dest, path.Clean("/"+name)), io.LimitReader(resp.Body, 1<<30), 0o644)
		resp.Body.Close()
		if err != nil {
			return err
		}
		rc.AppendMetadata("loaded_urls", map[string]any{"url": u.URL, "filename": name,
			"destination_path": dest, "sandbox_id": sb.ID(), "step_id": rc.StepID()})
	}
	return nil
}
