package loadartifact

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// loadIntoEnv loads environment and environment_universe artifacts into
// the deployed env env_id: per environment artifact, find
// the backing server whose environment_name matches, then data/reset and
// data/add with the artifact's file as one inline FilePart, through
// <gateway>/svc/mcp-<name>/agentenv. An artifact whose name no server has
// is skipped and reported. It returns handled=false when the artifacts are
// files (they go to the env's sandbox as before).
func (c *Config) loadIntoEnv(ctx context.Context, rc *runner.RunContext) (bool, error) {
	arts, err := rc.Services().ArtifactStore()
	if err != nil {
		return false, nil
	}
	type envArt struct {
		env      *artifact.Environment
		universe *artifact.EnvironmentUniverse
	}
	var todo []envArt
	for _, ref := range c.refs() {
		d, err := arts.Get(ctx, ref)
		if err != nil {
			return true, err
		}
		switch d.Type {
		case artifact.TypeEnvironment, "service":
			e, err := arts.GetEnvironment(ctx, d.Ref())
			if err != nil {
				return true, err
			}
			todo = append(todo, envArt{env: e})
		case artifact.TypeEnvironmentUniverse, "service_universe":
			u, err := arts.GetEnvironmentUniverse(ctx, d.Ref())
			if err != nil {
				return true, err
			}
			todo = append(todo, envArt{universe: u})
		case artifact.TypeFile:
			// A plain file (a bundle's artifacts/<name>/<file>) is the data
			// of the server named like the file (email.json → email), or of
			// the env's only server.
			if _, err := rc.EnvEntry(c.EnvID, c.EnvStepID); err != nil {
				return true, fmt.Errorf("env_id: %w", err)
			}
			env, err := gwclient.ForEnv(rc, c.EnvID, c.EnvStepID)
			if err != nil {
				return false, nil // no gateway: copy into the env's sandbox
			}
			f, err := arts.GetFile(ctx, d.Ref())
			if err != nil {
				return true, err
			}
			server := ""
			stem := strings.TrimSuffix(path.Base(f.Filename), path.Ext(f.Filename))
			for _, s := range env.Servers {
				if s == stem {
					server = s
				}
			}
			if server == "" && len(env.Servers) == 1 {
				server = env.Servers[0]
			}
			if server == "" {
				server = stem // reported as skipped
			}
			todo = append(todo, envArt{env: &artifact.Environment{Header: f.Header, EnvironmentName: server, FileArtifactRef: d.Ref()}})
		default:
			if len(todo) > 0 {
				return true, fmt.Errorf("artifact %s is a %s; do not mix it with environment artifacts in one load", d.Ref(), d.Type)
			}
			return false, nil
		}
	}
	env, err := gwclient.ForEnv(rc, c.EnvID, c.EnvStepID)
	if err != nil {
		return true, err
	}
	for _, t := range todo {
		if t.env != nil {
			entry, err := c.loadEnvironment(ctx, rc, arts, env, t.env)
			if err != nil {
				return true, err
			}
			rc.AppendMetadata("loaded_environment_artifacts", entry)
			continue
		}
		u := t.universe
		var loaded, skipped []any
		for _, ref := range u.EnvironmentArtifactRefs {
			e, err := arts.GetEnvironment(ctx, ref)
			if err != nil {
				return true, fmt.Errorf("environment universe %s: %w", u.Ref(), err)
			}
			entry, err := c.loadEnvironment(ctx, rc, arts, env, e)
			if err != nil {
				return true, fmt.Errorf("environment universe %s: %w", u.Ref(), err)
			}
			if entry["skipped"] == true {
				skipped = append(skipped, entry)
			} else {
				loaded = append(loaded, entry)
			}
		}
		rc.AppendMetadata("loaded_environment_universes", map[string]any{"id": u.ID, "version": u.Version,
			"env_id": c.EnvID, "step_id": rc.StepID(), "loaded_environments": loaded, "skipped_environments": skipped})
	}
	return true, nil
}

func (c *Config) loadEnvironment(ctx context.Context, rc *runner.RunContext, arts *artifact.Store, env *gwclient.Env, e *artifact.Environment) (map[string]any, error) {
	entry := map[string]any{"id": e.ID, "version": e.Version, "environment_name": e.EnvironmentName,
		"env_id": c.EnvID, "step_id": rc.StepID()}
	found := false
	for _, s := range env.Servers {
		found = found || s == e.EnvironmentName
	}
	if !found {
		entry["skipped"] = true
		entry["reason"] = fmt.Sprintf("no server of env %s is named %q (servers: %s)", c.EnvID, e.EnvironmentName, strings.Join(env.Servers, ", "))
		rc.Logger().Warn("environment artifact skipped", "artifact", e.Ref().String(), "reason", entry["reason"])
		return entry, nil
	}
	r, f, err := arts.OpenFile(ctx, e.FileArtifactRef)
	if err != nil {
		return nil, fmt.Errorf("environment artifact %s: %w", e.Ref(), err)
	}
	body, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("environment artifact %s: %w", e.Ref(), err)
	}
	mime := f.ContentType
	if mime == "" {
		mime = "application/json"
	}
	srv := env.Server(e.EnvironmentName)
	if err := srv.ResetData(ctx); err != nil {
		return nil, fmt.Errorf("env %s server %s refused data/reset: %w", c.EnvID, e.EnvironmentName, err)
	}
	part := protocol.Part{Kind: protocol.PartKindFile, File: &protocol.FileContent{Name: f.Filename, MimeType: mime, Bytes: body}}
	if err := srv.AddData(ctx, []protocol.Part{part}); err != nil {
		return nil, fmt.Errorf("env %s server %s refused data/add of part 0 (file %s from %s): %w",
			c.EnvID, e.EnvironmentName, f.Filename, e.Ref(), err)
	}
	entry["filename"] = f.Filename
	entry["file_artifact"] = registry.Ref{ID: e.FileArtifactRef.ID, Version: e.FileArtifactRef.Version}.String()
	return entry, nil
}
