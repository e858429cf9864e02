package envdeploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/agentenv/agentenv/internal/jsonobj"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
)

// Env types.
const (
	TypeMCPServer     = "mcp_server"
	TypeMulti         = "multi"
	TypeGatewayServer = "gateway_server"
	TypeWebsite       = "website"
	TypeServiceDB     = "service_db"
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
// kinds stay empty. It reads and writes the Python framework's field names
// (docker_image_artifact, mcp_server_envs, website_envs, ...; see envWire)
// and still reads the names older builds of this project wrote. Members it
// does not know are kept in Extra and written back.
type Env struct {
	ID              string
	Type            string
	Version         int
	CreatedAtUTC    string
	Description     string
	EnvironmentName string
	ServiceName     string // twin of EnvironmentName
	EnvProviderType string
	// DockerImageArtifactRef pins the docker_image artifact (mcp_server,
	// gateway_server): docker_image_artifact {id, version, type}.
	DockerImageArtifactRef *registry.Ref
	// BinaryArtifactRef pins the static binary (set for --go-package).
	BinaryArtifactRef *registry.Ref
	ImageName         string
	// MCPServerRefs and WebsiteEnvRefs pin the members of a multi env
	// (mcp_server_envs, website_envs).
	MCPServerRefs  []registry.Ref
	WebsiteEnvRefs []registry.Ref
	Name           string // multi: fixed gateway name
	// BackendImageArtifactRef and FrontendImageArtifactRef pin the two
	// images of a website env.
	BackendImageArtifactRef  *registry.Ref
	FrontendImageArtifactRef *registry.Ref
	// DBImageArtifactRef, DBWebImageArtifactRef and DBMCPImageArtifactRef
	// pin the three images of a service_db env.
	DBImageArtifactRef    *registry.Ref
	DBWebImageArtifactRef *registry.Ref
	DBMCPImageArtifactRef *registry.Ref
	// DBBinaryArtifactRef pins the static database workload binary
	// (agentenv-postgres) the process provider runs, and DBImageName the
	// database image as built or registered; DBWriteRoles are the roles
	// the db MCP server lets write (DB_WRITE_ROLES). The db MCP server's
	// own binary and image name are BinaryArtifactRef and ImageName.
	DBBinaryArtifactRef *registry.Ref
	DBImageName         string
	DBWriteRoles        []string
	// Metadata holds any JSON: the Python framework stores numbers and
	// lists there (min_disk_size_gb: 20).
	Metadata map[string]any
	Source   *BuildSource
	// Extra holds the members this build does not know, kept verbatim.
	Extra jsonobj.Extra
}

// typedRef is how the Python framework writes a pinned entity inside
// another document: {id, version, type}.
type typedRef struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
	Type    string `json:"type"`
}

func typed(r *registry.Ref, typ string) *typedRef {
	if r == nil {
		return nil
	}
	return &typedRef{ID: r.ID, Version: r.Version, Type: typ}
}

func untyped(t *typedRef, legacy *registry.Ref) *registry.Ref {
	if t == nil {
		return legacy
	}
	return &registry.Ref{ID: t.ID, Version: t.Version}
}

func typedList(rs []registry.Ref, typ string) *[]typedRef {
	out := make([]typedRef, 0, len(rs))
	for _, r := range rs {
		out = append(out, typedRef{ID: r.ID, Version: r.Version, Type: typ})
	}
	return &out
}

func untypedList(ts *[]typedRef, legacy []registry.Ref) []registry.Ref {
	if ts == nil {
		return legacy
	}
	out := make([]registry.Ref, 0, len(*ts))
	for _, t := range *ts {
		out = append(out, registry.Ref{ID: t.ID, Version: t.Version})
	}
	return out
}

// envWire is the stored form of an Env.
type envWire struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Version  int            `json:"version"`
	Metadata map[string]any `json:"metadata"`

	CreatedAtUTC string `json:"created_at_utc,omitempty"`
	Description  string `json:"description,omitempty"`

	// mcp_server, gateway_server
	DockerImageArtifact *typedRef `json:"docker_image_artifact,omitempty"`
	// website
	BackendDockerImageArtifact  *typedRef `json:"backend_docker_image_artifact,omitempty"`
	FrontendDockerImageArtifact *typedRef `json:"frontend_docker_image_artifact,omitempty"`
	// service_db
	DBDockerImageArtifact    *typedRef `json:"db_docker_image_artifact,omitempty"`
	DBWebDockerImageArtifact *typedRef `json:"db_web_docker_image_artifact,omitempty"`
	DBMCPDockerImageArtifact *typedRef `json:"db_mcp_docker_image_artifact,omitempty"`
	// mcp_server, website
	ServiceName     string `json:"service_name,omitempty"`
	EnvironmentName string `json:"environment_name,omitempty"`
	EnvProviderType string `json:"env_provider_type,omitempty"`
	// multi: both lists are always written, as the Python framework does
	MCPServerEnvs *[]typedRef `json:"mcp_server_envs,omitempty"`
	WebsiteEnvs   *[]typedRef `json:"website_envs,omitempty"`
	Name          string      `json:"name,omitempty"`

	// This project's own: the binary for the process provider, the image
	// reference as built, and where it came from.
	BinaryArtifactRef *registry.Ref `json:"binary_artifact_ref,omitempty"`
	ImageName         string        `json:"image_name,omitempty"`
	Source            *BuildSource  `json:"source,omitempty"`
	// service_db, this project's own
	DBBinaryArtifactRef *registry.Ref `json:"db_binary_artifact_ref,omitempty"`
	DBImageName         string        `json:"db_image_name,omitempty"`
	DBWriteRoles        []string      `json:"db_write_roles,omitempty"`

	// Written by older builds of this project: read, never written.
	OldDockerImageArtifactRef *registry.Ref  `json:"docker_image_artifact_ref,omitempty"`
	OldMCPServerRefs          []registry.Ref `json:"mcp_server_refs,omitempty"`
}

// Artifact and member types written inside env documents.
const (
	refDockerImage = "docker_image"
)

// MarshalJSON writes the Python framework's field names.
func (e Env) MarshalJSON() ([]byte, error) {
	w := envWire{ID: e.ID, Type: e.Type, Version: e.Version, Metadata: e.Metadata, CreatedAtUTC: e.CreatedAtUTC,
		Description: e.Description, DockerImageArtifact: typed(e.DockerImageArtifactRef, refDockerImage),
		BackendDockerImageArtifact:  typed(e.BackendImageArtifactRef, refDockerImage),
		FrontendDockerImageArtifact: typed(e.FrontendImageArtifactRef, refDockerImage),
		DBDockerImageArtifact:       typed(e.DBImageArtifactRef, refDockerImage),
		DBWebDockerImageArtifact:    typed(e.DBWebImageArtifactRef, refDockerImage),
		DBMCPDockerImageArtifact:    typed(e.DBMCPImageArtifactRef, refDockerImage),
		ServiceName:                 e.ServiceName, EnvironmentName: e.EnvironmentName, EnvProviderType: e.EnvProviderType,
		Name: e.Name, BinaryArtifactRef: e.BinaryArtifactRef, ImageName: e.ImageName, Source: e.Source,
		DBBinaryArtifactRef: e.DBBinaryArtifactRef, DBImageName: e.DBImageName, DBWriteRoles: e.DBWriteRoles}
	if w.Metadata == nil {
		w.Metadata = map[string]any{}
	}
	if e.Type == TypeMulti || len(e.MCPServerRefs) > 0 || len(e.WebsiteEnvRefs) > 0 {
		w.MCPServerEnvs = typedList(e.MCPServerRefs, TypeMCPServer)
		w.WebsiteEnvs = typedList(e.WebsiteEnvRefs, TypeWebsite)
	}
	return jsonobj.Encode(w, e.Extra)
}

// UnmarshalJSON reads the Python framework's field names, and the names
// older builds of this project wrote.
func (e *Env) UnmarshalJSON(b []byte) error {
	var w envWire
	var extra jsonobj.Extra
	if err := jsonobj.Decode(b, &w, &extra); err != nil {
		return err
	}
	*e = Env{ID: w.ID, Type: w.Type, Version: w.Version, CreatedAtUTC: w.CreatedAtUTC, Description: w.Description,
		EnvironmentName: w.EnvironmentName, ServiceName: w.ServiceName, EnvProviderType: w.EnvProviderType,
		DockerImageArtifactRef:   untyped(w.DockerImageArtifact, w.OldDockerImageArtifactRef),
		BackendImageArtifactRef:  untyped(w.BackendDockerImageArtifact, nil),
		FrontendImageArtifactRef: untyped(w.FrontendDockerImageArtifact, nil),
		DBImageArtifactRef:       untyped(w.DBDockerImageArtifact, nil),
		DBWebImageArtifactRef:    untyped(w.DBWebDockerImageArtifact, nil),
		DBMCPImageArtifactRef:    untyped(w.DBMCPDockerImageArtifact, nil),
		MCPServerRefs:            untypedList(w.MCPServerEnvs, w.OldMCPServerRefs),
		WebsiteEnvRefs:           untypedList(w.WebsiteEnvs, nil),
		Name:                     w.Name, BinaryArtifactRef: w.BinaryArtifactRef, ImageName: w.ImageName,
		Metadata: w.Metadata, Source: w.Source, Extra: extra,
		DBBinaryArtifactRef: w.DBBinaryArtifactRef, DBImageName: w.DBImageName, DBWriteRoles: w.DBWriteRoles}
	if e.EnvironmentName == "" {
		e.EnvironmentName = e.ServiceName
	}
	return nil
}

// BuildSource records where an image came from.
type BuildSource struct {
	GoPackage  string `json:"go_package,omitempty"`
	Dockerfile string `json:"dockerfile,omitempty"`
	Context    string `json:"context,omitempty"`
	ImageRef   string `json:"image_ref,omitempty"`
}

// Agent is a stored A2A agent document (collection a2a_agents), read and
// written with the Python framework's field names (docker_image_artifact,
// default_env_vars, metadata.default_model; see agentWire). Older builds'
// names still read; unknown members are kept in Extra.
type Agent struct {
	ID                     string
	Type                   string
	Version                int
	CreatedAtUTC           string
	DockerImageArtifactRef *registry.Ref
	BinaryArtifactRef      *registry.Ref
	ImageName              string
	EnvVars                map[string]string // default_env_vars
	DefaultModel           string            // metadata.default_model
	Metadata               map[string]any    // any JSON, as Env.Metadata
	Source                 *BuildSource
	Extra                  jsonobj.Extra
}

// agentWire is the stored form of an Agent.
type agentWire struct {
	ID                  string            `json:"id"`
	Type                string            `json:"type"`
	Version             int               `json:"version"`
	DockerImageArtifact *typedRef         `json:"docker_image_artifact,omitempty"`
	DefaultEnvVars      map[string]string `json:"default_env_vars"`
	Metadata            map[string]any    `json:"metadata"`
	CreatedAtUTC        string            `json:"created_at_utc,omitempty"`

	BinaryArtifactRef *registry.Ref `json:"binary_artifact_ref,omitempty"`
	ImageName         string        `json:"image_name,omitempty"`
	Source            *BuildSource  `json:"source,omitempty"`

	// Written by older builds of this project: read, never written.
	OldDockerImageArtifactRef *registry.Ref     `json:"docker_image_artifact_ref,omitempty"`
	OldEnvVars                map[string]string `json:"env_vars,omitempty"`
	OldDefaultModel           string            `json:"default_model,omitempty"`
}

// MarshalJSON writes the Python framework's field names.
func (a Agent) MarshalJSON() ([]byte, error) {
	w := agentWire{ID: a.ID, Type: a.Type, Version: a.Version, DockerImageArtifact: typed(a.DockerImageArtifactRef, refDockerImage),
		DefaultEnvVars: a.EnvVars, Metadata: maps.Clone(a.Metadata), CreatedAtUTC: a.CreatedAtUTC,
		BinaryArtifactRef: a.BinaryArtifactRef, ImageName: a.ImageName, Source: a.Source}
	if w.DefaultEnvVars == nil {
		w.DefaultEnvVars = map[string]string{}
	}
	if w.Metadata == nil {
		w.Metadata = map[string]any{}
	}
	if a.DefaultModel != "" {
		w.Metadata["default_model"] = a.DefaultModel
	}
	return jsonobj.Encode(w, a.Extra)
}

// UnmarshalJSON reads the Python framework's field names, and the names
// older builds of this project wrote.
func (a *Agent) UnmarshalJSON(b []byte) error {
	var w agentWire
	var extra jsonobj.Extra
	if err := jsonobj.Decode(b, &w, &extra); err != nil {
		return err
	}
	*a = Agent{ID: w.ID, Type: w.Type, Version: w.Version, CreatedAtUTC: w.CreatedAtUTC,
		DockerImageArtifactRef: untyped(w.DockerImageArtifact, w.OldDockerImageArtifactRef),
		BinaryArtifactRef:      w.BinaryArtifactRef, ImageName: w.ImageName, EnvVars: w.DefaultEnvVars,
		Metadata: w.Metadata, Source: w.Source, Extra: extra}
	if len(a.EnvVars) == 0 && len(w.OldEnvVars) > 0 {
		a.EnvVars = w.OldEnvVars
	}
	if m, ok := w.Metadata["default_model"].(string); ok {
		a.DefaultModel = m
	} else {
		a.DefaultModel = w.OldDefaultModel
	}
	return nil
}

// Stores are what put and deploy read and write.
type Stores struct {
	Docs registry.DocumentStore
	// RecordsAlso are more stores searched for instance records (the
	// @local store beside the default one).
	RecordsAlso []registry.DocumentStore
	// Route, when set, picks the stores owning an entity id (the @local
	// store for @local/... ids) for reads of envs, agents
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
	e.ImageName = s.imageName(ctx, e.ImageName, e.DockerImageArtifactRef)
	return &e, nil
}

// imageName is the image reference a document names: its own image_name
// when it has one (this project writes it), else the image_name of the
// docker_image artifact it pins (documents of the Python framework name
// only the artifact). "" when neither says.
func (s Stores) imageName(ctx context.Context, own string, artifactRef *registry.Ref) string {
	if own != "" || artifactRef == nil {
		return own
	}
	di, err := s.artifactsFor(artifactRef.ID).GetDockerImage(ctx, *artifactRef)
	if err != nil {
		return "" // the deploy that needs the image reports the missing artifact
	}
	return di.ImageName
}

// GetEnv reads an env document.
func (s Stores) GetEnv(ctx context.Context, ref registry.Ref) (*Env, error) {
	return s.getEnv(ctx, ref)
}

// GetDocument reads a stored document of c (envs, a2a_agents) from the
// store owning ref's id, whole: every member, also those no typed read
// knows.
func (s Stores) GetDocument(ctx context.Context, c registry.Collection, ref registry.Ref) (registry.Document, error) {
	return s.docsFor(ref.ID).Get(ctx, c, ref)
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
	a.ImageName = s.imageName(ctx, a.ImageName, a.DockerImageArtifactRef)
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

// OpenAgentBinary opens the static binary a registered agent runs from, for
// steps that start the agent themselves inside a sandbox they do not own
// (install_agent, deploy_agent with sandbox_name). An agent registered only
// as a Docker image has no binary: that is an error naming the agent.
func (s Stores) OpenAgentBinary(ctx context.Context, a *Agent) (io.ReadCloser, error) {
	if a.BinaryArtifactRef == nil {
		return nil, fmt.Errorf("a2a agent %s v%d has no binary artifact (registered as an image only); "+
			"register it from a Go package or binary to start it inside a sandbox", a.ID, a.Version)
	}
	rc, _, err := s.artifactsFor(a.BinaryArtifactRef.ID).OpenFile(ctx, *a.BinaryArtifactRef)
	if err != nil {
		return nil, fmt.Errorf("a2a agent %s v%d binary: %w", a.ID, a.Version, err)
	}
	return rc, nil
}
