// Package collectartifacts is the collect_artifacts step: gather files a
// run produced into a new file_artifact_universe and record
// it in metadata.collected_artifacts[<step_id>] = {id, version, files}.
//
// The files come from a deployed sandbox (sandbox_name), or from the
// sandbox an agent (agent_name) or env (env_id) of the run was deployed
// in: the files named by artifact_paths, relative to base_path, or every
// file under base_path, copied out with Sandbox.CopyOut. The agent wrote
// those files, so a symlink among them is followed only to a file or
// folder under base_path (a file is collected under the link's path with
// its target's content); a link that leads out of base_path, dangles or
// loops fails the step with an error naming the link and its target, and
// nothing is stored; so does a collection past MaxBytes. Every provider
// copies out of its env and agent groups too: the process backend from
// the group's work folder, Docker from the agent's container or the env
// server's (never the gateway's). A provider whose sandboxes cannot copy
// files out fails the step with an error naming the provider. Collecting from
// manifest steps and containers is a later phase. The step is refused in
// bundle runs, whose outputs must keep @local ids.
package collectartifacts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// Type is the step type name.
const Type = "collect_artifacts"

// MaxBytes bounds the files one step collects, in total (as load_artifact
// bounds a download): they are held in memory until all are read.
const MaxBytes = 1 << 30

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields.
type Config struct {
	AgentName        string   `json:"agent_name,omitempty"`
	BasePath         string   `json:"base_path,omitempty"`     // /app/artifact
	ArtifactsKey     string   `json:"artifacts_key,omitempty"` // expected_artifacts
	ArtifactPaths    []string `json:"artifact_paths,omitempty"`
	EnvID            string   `json:"env_id,omitempty"`
	ManifestStepID   string   `json:"manifest_step_id,omitempty"`
	ExcludeBasenames []string `json:"exclude_basenames,omitempty"`
	SandboxName      string   `json:"sandbox_name,omitempty"`
	ContainerName    string   `json:"container_name,omitempty"`
	UniverseIDSuffix string   `json:"universe_id_suffix,omitempty"`
}

var (
	_ runner.Step      = (*Config)(nil)
	_ runner.Validator = (*Config)(nil)
)

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	n := 0
	for _, s := range []string{c.SandboxName, c.AgentName, c.EnvID} {
		if s != "" {
			n++
		}
	}
	switch {
	case c.ManifestStepID != "":
		return runner.Invalid("manifest_step_id", "is a later phase")
	case c.ContainerName != "":
		return runner.Invalid("container_name", "is a later phase")
	case n == 0:
		return runner.Invalid("sandbox_name", "one of sandbox_name, agent_name or env_id is required")
	case n > 1:
		return runner.Invalid("sandbox_name", "give only one of sandbox_name, agent_name or env_id")
	}
	for _, p := range c.ArtifactPaths {
		if p == "" || strings.Contains(p, "..") || strings.HasPrefix(p, "/") {
			return runner.Invalid("artifact_paths", "paths are relative to base_path without '..', got %q", p)
		}
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	task, _ := rc.Metadata("task_id")
	if strings.HasPrefix(fmt.Sprint(task), "@local/") {
		return fmt.Errorf("collect_artifacts is refused in bundle runs: it would create artifacts outside the bundle's @local ids")
	}
	sb, from, err := c.source(ctx, rc)
	if err != nil {
		return err
	}
	base := c.BasePath
	if base == "" {
		base = "/app/artifact"
	}
	arts, err := rc.Services().ArtifactStore()
	if err != nil {
		return err
	}
	inst, _ := rc.Metadata("instance_id")
	id := fmt.Sprint(task) + "-collected-" + rc.StepID()
	if s := fmt.Sprint(inst); inst != nil && s != "" {
		id = s + "-" + rc.StepID()
	}
	if c.UniverseIDSuffix != "" {
		id += "-" + c.UniverseIDSuffix
	}
	// CopyOut follows a symlink only to a file or folder under base; one
	// leading elsewhere fails the step with its name and target. Nothing is
	// stored until every file has been read.
	var got []sandbox.File
	opts := &sandbox.CopyOutOptions{Paths: c.ArtifactPaths, MaxBytes: MaxBytes}
	if len(c.ExcludeBasenames) > 0 {
		opts.Skip = func(p string) bool { return excluded(p, c.ExcludeBasenames) }
	}
	err = sb.CopyOut(ctx, base, opts, func(f sandbox.File) error { got = append(got, f); return nil })
	if errors.Is(err, sandbox.ErrNotSupported) {
		return fmt.Errorf("collect_artifacts: the %s sandbox provider cannot copy files out of %s: %w", sb.Type(), from, err)
	}
	if err != nil {
		return fmt.Errorf("collect from %s: %w", from, err)
	}
	members := map[string]registry.Ref{}
	var files []string
	for _, f := range got {
		a, err := arts.PutFile(ctx, id+"-"+strings.ReplaceAll(f.Path, "/", "-"), artifact.FileInput{Filename: path.Base(f.Path), Body: bytes.NewReader(f.Data)})
		if err != nil {
			return err
		}
		members[f.Path] = a.Ref()
		files = append(files, f.Path)
	}
	if len(members) == 0 {
		return fmt.Errorf("collect_artifacts: no files under %s in %s", base, from)
	}
	u, err := arts.PutUniverse(ctx, id, members, &artifact.UniverseOptions{Description: "collected by step " + rc.StepID()})
	if err != nil {
		return err
	}
	rc.SetMetadataEntry("collected_artifacts", rc.StepID(), map[string]any{"id": u.ID, "version": u.Version, "files": files})
	return nil
}

// source is the sandbox the files are copied out of, and how messages
// name it: the named sandbox, or the one an agent or env was deployed in.
func (c *Config) source(ctx context.Context, rc *runner.RunContext) (sandbox.Sandbox, string, error) {
	if c.SandboxName != "" {
		_, sb, err := rc.Sandbox(ctx, c.SandboxName)
		if err != nil {
			return nil, "", fmt.Errorf("sandbox_name: %w", err)
		}
		return sb, "sandbox " + c.SandboxName, nil
	}
	field, key, nameField, name, from := "agent_name", runner.KeyDeployedAgents, "agent_name", c.AgentName, fmt.Sprintf("agent %q", c.AgentName)
	if c.EnvID != "" {
		field, key, nameField, name, from = "env_id", runner.KeyDeployedEnvs, "env_id", c.EnvID, fmt.Sprintf("env %q", c.EnvID)
	}
	id, err := rc.EntrySandboxID(key, nameField, name)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", field, err)
	}
	sb, err := rc.SandboxByID(ctx, id)
	if err != nil {
		return nil, "", fmt.Errorf("%s %q: %w", field, name, err)
	}
	return sb, from, nil
}

func excluded(p string, names []string) bool {
	for _, n := range names {
		if path.Base(p) == n {
			return true
		}
	}
	return false
}
