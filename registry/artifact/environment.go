package artifact

import (
	"context"
	"fmt"
	"io"

	"github.com/agentenv/agentenv/registry"
)

// EnvironmentInput describes an environment artifact to create. The data
// file becomes file artifact "<id>-file".
type EnvironmentInput struct {
	EnvironmentName string // required: the env's environment_name
	Description     string
	Filename        string // required
	ContentType     string
	Body            io.Reader // required
}

// PutEnvironment stores the data file as "<id>-file" and a new version of
// environment artifact id pinning it.
func (s *Store) PutEnvironment(ctx context.Context, id string, in EnvironmentInput) (*Environment, error) {
	if in.EnvironmentName == "" {
		return nil, &registry.InvalidError{Field: "environment_name", Reason: "required"}
	}
	if err := registry.ValidateID(id); err != nil {
		return nil, err
	}
	f, err := s.PutFile(ctx, id+"-file", FileInput{Filename: in.Filename, ContentType: in.ContentType, Description: in.Description, Body: in.Body})
	if err != nil {
		return nil, err
	}
	d, err := s.put(ctx, TypeEnvironment, id, nil, func(int, map[string]stored) (any, error) {
		return Environment{Header: Header{Type: TypeEnvironment, Description: in.Description},
			EnvironmentName: in.EnvironmentName, ServiceName: in.EnvironmentName, FileArtifactRef: f.Ref()}, nil
	})
	if err != nil {
		return nil, err
	}
	var e Environment
	return &e, d.Decode(&e)
}

// GetEnvironment reads an environment artifact (legacy type "service"
// accepted).
func (s *Store) GetEnvironment(ctx context.Context, ref registry.Ref) (*Environment, error) {
	var e Environment
	if err := s.getAs(ctx, ref, TypeEnvironment, &e); err != nil {
		return nil, err
	}
	if e.EnvironmentName == "" {
		e.EnvironmentName = e.ServiceName
	}
	return &e, nil
}

// PutEnvironmentUniverse stores a new version of environment_universe id.
// Refs with Version 0 are pinned to the latest now; each must be an
// environment artifact, at most one per environment_name. metadata refs
// (name → any artifact) are pinned the same way.
func (s *Store) PutEnvironmentUniverse(ctx context.Context, id string, envs []registry.Ref, metadata map[string]registry.Ref, description string) (*EnvironmentUniverse, error) {
	if len(envs) == 0 {
		return nil, &registry.InvalidError{Field: "environment_artifact_refs", Reason: "at least one environment artifact is needed"}
	}
	pinned := make([]registry.Ref, 0, len(envs))
	byName := map[string]string{}
	for _, r := range envs {
		e, err := s.GetEnvironment(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("environment universe %s: %w", id, err)
		}
		if other, dup := byName[e.EnvironmentName]; dup {
			return nil, &registry.InvalidError{Field: "environment_artifact_refs", Value: e.Ref().String(),
				Reason: "environment " + e.EnvironmentName + " is already given by " + other}
		}
		byName[e.EnvironmentName] = e.Ref().String()
		pinned = append(pinned, e.Ref())
	}
	meta := make(map[string]registry.Ref, len(metadata))
	for name, r := range metadata {
		d, err := s.Get(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("environment universe %s metadata %s: %w", id, name, err)
		}
		meta[name] = d.Ref()
	}
	d, err := s.put(ctx, TypeEnvironmentUniverse, id, nil, func(int, map[string]stored) (any, error) {
		return EnvironmentUniverse{Header: Header{Type: TypeEnvironmentUniverse, Description: description},
			EnvironmentArtifactRefs: pinned, ServiceArtifactRefs: pinned, MetadataRefs: meta}, nil
	})
	if err != nil {
		return nil, err
	}
	var u EnvironmentUniverse
	return &u, d.Decode(&u)
}

// GetEnvironmentUniverse reads an environment_universe (legacy
// "service_universe" accepted).
func (s *Store) GetEnvironmentUniverse(ctx context.Context, ref registry.Ref) (*EnvironmentUniverse, error) {
	var u EnvironmentUniverse
	if err := s.getAs(ctx, ref, TypeEnvironmentUniverse, &u); err != nil {
		return nil, err
	}
	if len(u.EnvironmentArtifactRefs) == 0 {
		u.EnvironmentArtifactRefs = u.ServiceArtifactRefs
	}
	return &u, nil
}
