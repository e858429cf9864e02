package registry

import (
	"context"
	"io"
)

// ImageStore names container images and keeps their tarballs.
//
// Refs follow runner.md §10.5: <host>/<prefix/>repository:v<N>, e.g.
// "localhost:5000/items__env_image:v1". The tarball (docker save format,
// gzipped) lives in the object store at
// artifacts/docker_image/<id-segment>/<N>/image.tar.gz; it is what the local
// Docker sandbox loads when the engine lacks the image.
type ImageStore interface {
	// Ref returns the reference of version n of repository; repository must
	// be a valid OCI name (see RepositoryName) and version >= 1.
	Ref(repository string, version int) (string, error)
	// Owns reports whether ref names an image of this store's registry.
	Owns(ref string) bool
	// Host is the registry host ("localhost:5000").
	Host() string
	// PutTarball stores an image tarball for (repository, version); write-once.
	PutTarball(ctx context.Context, repository string, version int, r io.Reader) (ObjectInfo, error)
	// OpenTarball opens it; ErrNotFound when absent.
	OpenTarball(ctx context.Context, repository string, version int) (io.ReadCloser, ObjectInfo, error)
}

// Image artifact ids (runner.md §10.5).
func EnvImageArtifactID(envID string) string     { return envID + "__env_image" }
func AgentImageArtifactID(agentID string) string { return "a2a-agent-" + agentID }
