// Package snapshotenv is the snapshot_env step: export each backing
// server's data/get as a new environment artifact and bundle them into a
// new environment_universe version that a later task loads with
// load_artifact. The result is recorded in
// metadata.env_snapshotted_universes[<step_id>] = {id, version}.
package snapshotenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// Type is the step type name.
const Type = "snapshot_env"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields.
type Config struct {
	EnvID                      string   `json:"env_id,omitempty"`
	EnvInstanceID              string   `json:"env_instance_id,omitempty"`
	EnvStepID                  string   `json:"env_step_id,omitempty"`
	GatewayURL                 string   `json:"gateway_url,omitempty"`
	SnapshotID                 string   `json:"snapshot_id,omitempty"`
	OriginalUniverseArtifactID string   `json:"original_universe_artifact_id,omitempty"`
	ExportTimeoutSeconds       *float64 `json:"export_timeout_seconds,omitempty"` // 600
	IncludeEnvTrajectory       bool     `json:"include_env_trajectory,omitempty"`
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.EnvRef("env_id"), runner.ArtifactRef("original_universe_artifact_id", "")}
}

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.SnapshotID != "" {
		if err := registry.ValidateID(c.SnapshotID); err != nil {
			return runner.Invalid("snapshot_id", "%v", err)
		}
	}
	if c.ExportTimeoutSeconds != nil && *c.ExportTimeoutSeconds <= 0 {
		return runner.Invalid("export_timeout_seconds", "must be positive")
	}
	if c.IncludeEnvTrajectory {
		return runner.Invalid("include_env_trajectory", "is a later phase")
	}
	if c.GatewayURL != "" {
		return runner.Invalid("gateway_url", "snapshots of envs outside the run are a later phase; name the env with env_id")
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	envID := c.EnvID
	if envID == "" {
		envs := rc.Envs()
		for _, e := range envs {
			if c.EnvInstanceID != "" && e.InstanceID == c.EnvInstanceID || c.EnvStepID != "" && e.DeployStepID() == c.EnvStepID {
				envID = e.EnvID
			}
		}
		if envID == "" && len(envs) == 1 {
			envID = envs[0].EnvID
		}
		if envID == "" {
			return runner.Invalid("env_id", "give env_id, env_instance_id or env_step_id (the run has %d envs)", len(envs))
		}
	}
	env, err := gwclient.ForEnv(rc, envID, c.EnvStepID)
	if err != nil {
		return err
	}
	arts, err := rc.Services().ArtifactStore()
	if err != nil {
		return err
	}
	id := c.SnapshotID
	if task, _ := rc.Metadata("task_id"); id == "" && strings.HasPrefix(fmt.Sprint(task), "@local/") {
		// A bundle run must not mint output ids of its own.
		return fmt.Errorf("snapshot_id is required in bundle runs (task %v)", task)
	}
	if id == "" {
		// The instance id's random tail; its head is the env id.
		inst, _ := env.Entry["instance_id"].(string)
		inst = inst[max(0, len(inst)-registry.InstanceSuffixLen):]
		id = "snapshot-" + strings.ReplaceAll(envID, "/", "-") + "-" + inst
	}
	timeout := 600 * time.Second
	if c.ExportTimeoutSeconds != nil {
		timeout = time.Duration(*c.ExportTimeoutSeconds * float64(time.Second))
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var refs []registry.Ref
	for _, s := range env.Servers {
		parts, err := env.Server(s).GetData(cctx, nil)
		if err != nil {
			return fmt.Errorf("env %s server %s: data/get: %w", envID, s, err)
		}
		body, err := ExportBody(parts)
		if err != nil {
			return fmt.Errorf("env %s server %s: %w", envID, s, err)
		}
		ext, ctype := exportType(parts)
		e, err := arts.PutEnvironment(ctx, id+"-"+s, artifact.EnvironmentInput{EnvironmentName: s, Filename: s + ext,
			ContentType: ctype, Description: "snapshot of env " + envID + " server " + s, Body: bytes.NewReader(body)})
		if err != nil {
			return err
		}
		refs = append(refs, e.Ref())
	}
	meta := map[string]registry.Ref{}
	if c.OriginalUniverseArtifactID != "" {
		meta["original_universe"] = registry.Ref{ID: c.OriginalUniverseArtifactID}
	}
	u, err := arts.PutEnvironmentUniverse(ctx, id, refs, meta, "snapshot of env "+envID)
	if err != nil {
		return err
	}
	rc.SetMetadataEntry("env_snapshotted_universes", rc.StepID(), map[string]any{"id": u.ID, "version": u.Version})
	return nil
}

// exportType is the file extension and content type of an export: JSON,
// unless the server exported one file of another type (a service_db's
// SQL dump keeps its .sql name and application/sql, and loads back as
// such).
func exportType(parts []protocol.Part) (string, string) {
	if len(parts) == 1 && parts[0].Kind == protocol.PartKindFile && parts[0].File != nil && parts[0].File.MimeType != "" &&
		parts[0].File.MimeType != "application/json" {
		ext := path.Ext(parts[0].File.Name)
		if ext == "" {
			ext = ".dat"
		}
		return ext, parts[0].File.MimeType
	}
	return ".json", "application/json"
}

// ExportBody is a server's data/get export as one JSON document: its only JSON
// part, or a list of them.
func ExportBody(parts []protocol.Part) ([]byte, error) {
	var docs []json.RawMessage
	for _, p := range parts {
		switch {
		case p.Kind == protocol.PartKindData:
			docs = append(docs, p.Data)
		case p.Kind == protocol.PartKindFile && p.File != nil && p.File.Bytes != nil:
			docs = append(docs, p.File.Bytes)
		}
	}
	switch len(docs) {
	case 0:
		return nil, fmt.Errorf("data/get returned no data or inline file part")
	case 1:
		return docs[0], nil
	}
	return json.Marshal(docs)
}
