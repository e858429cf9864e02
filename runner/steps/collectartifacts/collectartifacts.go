// Package collectartifacts is the collect_artifacts step: gather files a
// run produced into a new file_artifact_universe (runner.md §7) and record
// it in metadata.collected_artifacts[<step_id>] = {id, version, files}.
//
// This build collects from a deployed sandbox (sandbox_name): the files
// named by artifact_paths, relative to base_path, or every file under
// base_path, copied out with Sandbox.CopyOut. The agent wrote those files,
// so a symlink among them is followed only to a file or folder under
// base_path (a file is collected under the link's path with its target's
// content); a link that leads out of base_path, dangles or loops fails the
// step with an error naming the link and its target, and nothing is
// stored. Collecting from agents and envs (their workloads have no file
// access here) and from manifest steps is a later phase. The step is
// refused in bundle runs, whose outputs must keep @local ids (§9).
package collectartifacts

import (
	"bytes"
	"context"
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
	switch {
	case c.AgentName != "" || c.EnvID != "":
		return runner.Invalid("sandbox_name", "collecting from agents and envs is a later phase; collect from a deployed sandbox (sandbox_name)")
	case c.ManifestStepID != "":
		return runner.Invalid("manifest_step_id", "is a later phase")
	case c.ContainerName != "":
		return runner.Invalid("container_name", "is a later phase")
	case c.SandboxName == "":
		return runner.Required("sandbox_name")
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
	_, sb, err := rc.Sandbox(ctx, c.SandboxName)
	if err != nil {
		return fmt.Errorf("sandbox_name: %w", err)
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
	err = sb.CopyOut(ctx, base, &sandbox.CopyOutOptions{Paths: c.ArtifactPaths, Skip: func(p string) bool { return excluded(p, c.ExcludeBasenames) }},
		func(f sandbox.File) error { got = append(got, f); return nil })
	if err != nil {
		return fmt.Errorf("collect from sandbox %s: %w", c.SandboxName, err)
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
		return fmt.Errorf("collect_artifacts: no files under %s in sandbox %s", base, c.SandboxName)
	}
	u, err := arts.PutUniverse(ctx, id, members, &artifact.UniverseOptions{Description: "collected by step " + rc.StepID()})
	if err != nil {
		return err
	}
	rc.SetMetadataEntry("collected_artifacts", rc.StepID(), map[string]any{"id": u.ID, "version": u.Version, "files": files})
	return nil
}

func excluded(p string, names []string) bool {
	for _, n := range names {
		if path.Base(p) == n {
			return true
		}
	}
	return false
}
