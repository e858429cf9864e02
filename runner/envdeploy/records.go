package envdeploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
)

// Env types (runner.md §15).
const (
	TypeMCPServer     = "mcp_server"
	TypeMulti         = "multi"
	TypeGatewayServer = "gateway_server"
	TypeA2AAgent      = "a2a_agent"
)

// Env provider types.
const (
	ProviderGateway = "gateway"
	ProviderServer  = "server"
)

// DefaultGatewayID is the gateway env every deploy uses unless told.
const DefaultGatewayID = "default"

// BinaryArtifactID names the file artifact holding the static binary of an
// image artifact (kept so the process provider can run it).
func BinaryArtifactID(imageArtifactID string) string { return imageArtifactID + "__binary" }

// Env is a stored env document (collection envs). Fields of the other
// kinds stay empty.
type Env struct {
	ID              string `json:"id"`
	Type            string `json:"type"`
	Version         int    `json:"version"`
	CreatedAtUTC    string `json:"created_at_utc,omitempty"`
	Description     string `json:"description,omitempty"`
	EnvironmentName string `json:"environment_name,omitempty"`
	ServiceName     string `json:"service_name,omitempty"` // twin of environment_name
	EnvProviderType string `json:"env_provider_type,omitempty"`
	// DockerImageArtifactRef pins the docker_image artifact (mcp_server,
	// gateway_server).
	DockerImageArtifactRef *registry.Ref `json:"docker_image_artifact_ref,omitempty"`
	// BinaryArtifactRef pins the static binary (set for --go-package).
	BinaryArtifactRef *registry.Ref `json:"binary_artifact_ref,omitempty"`
	ImageName         string        `json:"image_name,omitempty"`
	// MCPServerRefs pins the members of a multi env.
	MCPServerRefs []registry.Ref `json:"mcp_server_refs,omitempty"`
	Name          string         `json:"name,omitempty"` // multi: fixed gateway name
	// Metadata holds any JSON: the Python framework stores numbers and
	// lists there (min_disk_size_gb: 20).
	Metadata map[string]any `json:"metadata,omitempty"`
	Source   *BuildSource   `json:"source,omitempty"`
}

// BuildSource records where an image came from.
type BuildSource struct {
	GoPackage  string `json:"go_package,omitempty"`
	Dockerfile string `json:"dockerfile,omitempty"`
	Context    string `json:"context,omitempty"`
	ImageRef   string `json:"image_ref,omitempty"`
}

// Agent is a stored A2A agent document (collection a2a_agents).
type Agent struct {
	ID                     string            `json:"id"`
	Type                   string            `json:"type"`
	Version                int               `json:"version"`
	CreatedAtUTC           string            `json:"created_at_utc,omitempty"`
	DockerImageArtifactRef *registry.Ref     `json:"docker_image_artifact_ref,omitempty"`
	BinaryArtifactRef      *registry.Ref     `json:"binary_artifact_ref,omitempty"`
	ImageName              string            `json:"image_name,omitempty"`
	EnvVars                map[string]string `json:"env_vars,omitempty"`
	DefaultModel           string            `json:"default_model,omitempty"`
	Metadata               map[string]any    `json:"metadata,omitempty"` // any JSON, as Env.Metadata
	Source                 *BuildSource      `json:"source,omitempty"`
}

// Stores are what put and deploy read and write.
type Stores struct {
	Docs registry.DocumentStore
	// RecordsAlso are more stores searched for instance records (the
	// @local store beside the default one, runner.md §10.7).
	RecordsAlso []registry.DocumentStore
	// Route, when set, picks the stores owning an entity id (the @local
	// store for @local/... ids, runner.md §10.7) for reads of envs, agents
	// and their artifacts; nil results fall back to Docs and Artifacts.
	Route     func(id string) (registry.DocumentStore, *artifact.Store)
	Artifacts *artifact.Store
	Images    registry.ImageStore
}

func (s Stores) docsFor(id string) registry.DocumentStore {
	if s.Route != nil {
		if d, _ := s.Route(id); d != nil {
			return d
		}
	}
	return s.Docs
}

func (s Stores) artifactsFor(id string) *artifact.Store {
	if s.Route != nil {
		if _, a := s.Route(id); a != nil {
			return a
		}
	}
	return s.Artifacts
}

func (s Stores) getEnv(ctx context.Context, ref registry.Ref) (*Env, error) {
	d, err := s.docsFor(ref.ID).Get(ctx, registry.Envs, ref)
	if err != nil {
		return nil, err
	}
	var e Env
	if err := d.Decode(&e); err != nil {
		return nil, fmt.Errorf("env %s: %w", ref, err)
	}
	return &e, nil
}

// GetEnv reads an env document.
func (s Stores) GetEnv(ctx context.Context, ref registry.Ref) (*Env, error) {
	return s.getEnv(ctx, ref)
}

// GetAgent reads an agent document.
func (s Stores) GetAgent(ctx context.Context, ref registry.Ref) (*Agent, error) {
	d, err := s.docsFor(ref.ID).Get(ctx, registry.A2AAgents, ref)
	if err != nil {
		return nil, err
	}
	var a Agent
	if err := d.Decode(&a); err != nil {
		return nil, fmt.Errorf("a2a agent %s: %w", ref, err)
	}
	return &a, nil
}

// metadataOf is the metadata of a document put from string flags.
func metadataOf(m map[string]string) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func putDoc(ctx context.Context, docs registry.DocumentStore, c registry.Collection, id string, v any) (registry.Document, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return registry.Document{}, err
	}
	return docs.Put(ctx, c, id, b, nil)
}

// source builds the workload source of an image + binary pair.
func (s Stores) source(ctx context.Context, imageRef, binaryRef *registry.Ref, imageName, what, hint string) Source {
	src := Source{Ref: imageName, What: what, PutHint: hint}
	if s.Images != nil {
		src.StoreID = s.Images.StoreID()
	}
	if imageRef != nil {
		r := *imageRef
		if di, err := s.artifactsFor(r.ID).GetDockerImage(ctx, r); err == nil && strings.HasPrefix(di.SourceDigest, "sha256:") {
			src.ImageID = di.SourceDigest
		}
		src.Tarball = func(ctx context.Context) (io.ReadCloser, error) {
			rc, _, err := s.artifactsFor(r.ID).OpenImageTarball(ctx, r)
			return rc, err
		}
	}
	if binaryRef != nil {
		r := *binaryRef
		src.Binary = func(ctx context.Context) (io.ReadCloser, error) {
			rc, _, err := s.artifactsFor(r.ID).OpenFile(ctx, r)
			return rc, err
		}
	}
	return src
}
