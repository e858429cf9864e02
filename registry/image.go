package registry

import "strings"

// ImageStore names container images.
//
// Refs are the reference's form plus the store id:
// <host>/<prefix/>repository:v<N>-<store id>, e.g.
// "localhost:5000/items__env_image:v1-3f2a9c1e0b4d5e6f". Versions are
// numbered per store, so the id keeps two stores that share a container
// engine from tagging different images alike. The image's tarball (docker
// save format, gzipped) is kept by its docker_image artifact
// (registry/artifact); it is what the local Docker sandbox loads when the
// engine lacks the image.
type ImageStore interface {
	// Ref returns the reference of version n of repository; repository must
	// be a valid OCI name (see RepositoryName) and version >= 1.
	Ref(repository string, version int) (string, error)
	// Owns reports whether ref names an image of this store's registry.
	Owns(ref string) bool
	// Host is the registry host ("localhost:5000").
	Host() string
	// StoreID is the id of the store the images belong to (see StoreID):
	// part of every ref, and the StoreLabel value of every image built
	// for the store. "" = none (refs are the plain v<N> form, and no image
	// is ever removed as this store's).
	StoreID() string
}

// EnvImageArtifactID is the id of an env's image artifact:
// "<env id>__env_image". For an @local env it is an @local id too,
// so the artifact lives in the @local store beside the env.
func EnvImageArtifactID(envID string) string { return envID + "__env_image" }

// AgentImageArtifactID is the id of an agent's image artifact:
// "a2a-agent-<agent id>". For an @local agent the prefix goes after
// "@local/" ("@local/x/agent" → "@local/a2a-agent-x/agent"), so the
// artifact is an @local id living beside the agent, never a bare id
// holding an @local one. Image names come from RepositoryName of the
// artifact id, which maps what an image name may not hold.
func AgentImageArtifactID(agentID string) string {
	if rest, ok := strings.CutPrefix(agentID, LocalPrefix); ok {
		return LocalPrefix + "a2a-agent-" + rest
	}
	return "a2a-agent-" + agentID
}
