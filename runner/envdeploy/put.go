package envdeploy

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
)

// ImageInput says how to produce an image: exactly one of GoPackage,
// Dockerfile or ImageRef.
type ImageInput struct {
	// GoPackage is built offline into a static binary and a FROM scratch
	// image; the binary is kept too, for the process provider.
	GoPackage string
	// GoDir is where the Go package is resolved ("" = current directory).
	GoDir string
	// Dockerfile is built by the engine with Context (default: the
	// Dockerfile's folder). It must not need a pull (FROM scratch).
	Dockerfile string
	Context    string
	// ImageRef registers an image the engine already holds.
	ImageRef string
	// Binary is a prebuilt static Linux binary used like a built
	// GoPackage (no compile); GoPackage then only names the source.
	Binary   string
	Platform string
}

func (in ImageInput) validate() error {
	n := 0
	src := in.GoPackage
	if src == "" {
		src = in.Binary
	}
	for _, s := range []string{src, in.Dockerfile, in.ImageRef} {
		if strings.TrimSpace(s) != "" {
			n++
		}
	}
	if n != 1 {
		return &registry.InvalidError{Field: "source", Reason: "give exactly one of --go-package (or --binary), --dockerfile or --image-ref"}
	}
	if in.Context != "" && in.Dockerfile == "" {
		return &registry.InvalidError{Field: "context", Reason: "--context needs --dockerfile"}
	}
	if in.Dockerfile != "" {
		if _, err := os.Stat(in.Dockerfile); err != nil {
			return fmt.Errorf("--dockerfile %s: %w", in.Dockerfile, err)
		}
	}
	return nil
}

// Putter registers envs and agents.
type Putter struct {
	Stores Stores
	// Builder builds --dockerfile images (the Docker provider); nil makes
	// --dockerfile an error naming the missing engine.
	Builder ImageBuilder
	// BuilderErr explains why Builder is nil.
	BuilderErr error
	// Out receives the progress lines; nil discards.
	Out io.Writer
	// TempDir holds build outputs; "" = os.TempDir().
	TempDir string
}

func (p *Putter) printf(format string, a ...any) {
	if p.Out != nil {
		fmt.Fprintf(p.Out, format+"\n", a...)
	}
}

// imageResult is what buildImage stored.
type imageResult struct {
	image  *artifact.DockerImage
	binary *artifact.File
}

// nextVersion is the version the next put of id in artifacts will get.
func (p *Putter) nextVersion(ctx context.Context, id string) (int, error) {
	vs, err := p.Stores.docsFor(id).Versions(ctx, registry.Artifacts, id)
	if errors.Is(err, registry.ErrNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	return vs[len(vs)-1].Version + 1, nil
}

// buildImage produces and stores the docker_image artifact artifactID
// (and, for Go packages, its binary artifact).
func (p *Putter) buildImage(ctx context.Context, artifactID string, in ImageInput, img imagebuild.Image, description string) (*imageResult, error) {
	if in.ImageRef != "" {
		di, err := p.Stores.artifactsFor(artifactID).PutDockerImage(ctx, artifactID, artifact.DockerImageInput{
			ImageName: in.ImageRef, Description: description, Platform: in.Platform}, nil)
		if err != nil {
			return nil, err
		}
		return &imageResult{image: di}, nil
	}
	v, err := p.nextVersion(ctx, artifactID)
	if err != nil {
		return nil, err
	}
	// Entity ids may hold what image names may not (@local/..., upper
	// case): RepositoryName maps those to a valid name, keeping distinct
	// ids distinct, and leaves valid ones as they are.
	ref, err := p.Stores.Images.Ref(registry.RepositoryName(artifactID), v)
	if err != nil {
		return nil, err
	}
	// The store label tells this store's images from another's on a shared
	// engine: only images carrying it are ever removed as this store's.
	var labels map[string]string
	if id := p.Stores.Images.StoreID(); id != "" {
		labels = map[string]string{registry.StoreLabel: id}
		img.Labels = maps.Clone(img.Labels)
		if img.Labels == nil {
			img.Labels = map[string]string{}
		}
		maps.Copy(img.Labels, labels)
	}
	tmp, err := os.MkdirTemp(p.TempDir, "agentenv-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	tarPath := filepath.Join(tmp, "image.tar.gz")
	res := &imageResult{}
	in2 := artifact.DockerImageInput{ImageName: ref, Description: description, Platform: in.Platform}
	switch {
	case in.GoPackage != "" || in.Binary != "":
		bin := in.Binary
		if bin != "" {
			// A prebuilt binary may have been built with cgo: refuse it here
			// rather than ship an image whose entrypoint cannot start.
			if err := imagebuild.CheckStatic(bin, sourcePackage(in)); err != nil {
				return nil, err
			}
		}
		if bin == "" {
			if bin, err = imagebuild.BuildGo(ctx, in.GoPackage, filepath.Join(tmp, "bin"), &imagebuild.GoOptions{Dir: in.GoDir, Progress: p.Out}); err != nil {
				return nil, err
			}
		}
		img.Binary = bin
		im, err := imagebuild.Scratch(img)
		if err != nil {
			return nil, err
		}
		f, err := os.Create(tarPath)
		if err != nil {
			return nil, err
		}
		err = imagebuild.WriteTarballGz(f, ref, im)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("write image tarball: %w", err)
		}
		if res.binary, err = p.Stores.artifactsFor(artifactID).PutFileFromPath(ctx, BinaryArtifactID(artifactID), bin, "app",
			"static binary of "+artifactID); err != nil {
			return nil, err
		}
		// The config digest is the engine's image id once loaded: deploy
		// compares it to notice a stale image under the same tag.
		if id, err := im.ConfigName(); err == nil {
			in2.SourceDigest = id.String()
		}
	case in.Dockerfile != "":
		if p.Builder == nil {
			if p.BuilderErr != nil {
				return nil, fmt.Errorf("--dockerfile needs a Docker engine: %w", p.BuilderErr)
			}
			return nil, fmt.Errorf("--dockerfile needs a Docker engine (%w)", ErrEngineUnavailable)
		}
		dir := in.Context
		if dir == "" {
			dir = filepath.Dir(in.Dockerfile)
		}
		ctxTar, dfName, err := imagebuild.ContextTar(dir, in.Dockerfile)
		if err != nil {
			return nil, err
		}
		err = p.Builder.BuildImage(ctx, ctxTar, dfName, ref, labels)
		ctxTar.Close()
		if err != nil {
			return nil, err
		}
		rc, err := p.Builder.SaveImage(ctx, ref)
		if err != nil {
			return nil, err
		}
		f, err := os.Create(tarPath)
		if err != nil {
			rc.Close()
			return nil, err
		}
		zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
		_, err = io.Copy(zw, rc)
		rc.Close()
		if err == nil {
			err = zw.Close()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("save image %s: %w", ref, err)
		}
		in2.DockerfilePath = in.Dockerfile
	}
	f, err := os.Open(tarPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	in2.Tarball = f
	if res.image, err = p.Stores.artifactsFor(artifactID).PutDockerImage(ctx, artifactID, in2, p.Stores.Images); err != nil {
		return nil, err
	}
	return res, nil
}

func refOf(h artifact.Header) *registry.Ref { r := h.Ref(); return &r }

// MCPServerInput registers an MCP server env (`env mcp-server put`).
type MCPServerInput struct {
	ID              string
	Image           ImageInput
	EnvironmentName string // "" = derived from the source
	EnvProviderType string // gateway (default) or server
	Metadata        map[string]string
	Description     string
}

// envNameRE matches a valid environment name (a DNS label: it is a
// network alias).
var envNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ValidEnvironmentName reports whether n can be an environment name.
func ValidEnvironmentName(n string) error {
	if !envNameRE.MatchString(n) {
		return &registry.InvalidError{Field: "environment_name", Value: n,
			Reason: "must be lowercase letters, digits and '-' (it is the server's network alias)"}
	}
	if n == "gateway" {
		return &registry.InvalidError{Field: "environment_name", Value: n, Reason: "is reserved for the gateway"}
	}
	return nil
}

// PutMCPServer builds and registers an MCP server env.
func (p *Putter) PutMCPServer(ctx context.Context, in MCPServerInput) (*Env, error) {
	if err := registry.ValidateID(in.ID); err != nil {
		return nil, err
	}
	if err := in.Image.validate(); err != nil {
		return nil, err
	}
	switch in.EnvProviderType {
	case "":
		in.EnvProviderType = ProviderGateway
	case ProviderGateway, ProviderServer:
	default:
		return nil, &registry.InvalidError{Field: "env_provider_type", Value: in.EnvProviderType, Reason: "must be gateway or server"}
	}
	name := in.EnvironmentName
	if name == "" {
		var err error
		if name, err = DeriveEnvironmentName(in.Image); err != nil {
			return nil, err
		}
		p.printf("Derived environment_name='%s' from the environment card.", name)
	}
	if err := ValidEnvironmentName(name); err != nil {
		return nil, err
	}
	// Refuse a document that can never deploy before building anything.
	if err := CheckTopology(&Env{Type: TypeMCPServer, EnvironmentName: name, EnvProviderType: in.EnvProviderType}); err != nil {
		return nil, err
	}
	artifactID := registry.EnvImageArtifactID(in.ID)
	p.printf("Building MCP server image (FROM scratch)...")
	img := imagebuild.Image{Env: map[string]string{"MCP_HOST": "0.0.0.0", "MCP_PORT": "18765", "ENVIRONMENT_NAME": name},
		ExposedPorts: []int{MCPPort}}
	res, err := p.buildImage(ctx, artifactID, in.Image, img, "MCP server image of env "+in.ID)
	if err != nil {
		return nil, err
	}
	p.printf("Creating image artifact...")
	p.printf("Created artifact: id=%s version=%d", res.image.ID, res.image.Version)
	p.printf("Creating MCPServerEnv...")
	e := Env{ID: in.ID, Type: TypeMCPServer, EnvironmentName: name, ServiceName: name, EnvProviderType: in.EnvProviderType,
		DockerImageArtifactRef: refOf(res.image.Header), ImageName: res.image.ImageName, Metadata: metadataOf(in.Metadata),
		Description: in.Description, Source: buildSource(in.Image)}
	if res.binary != nil {
		e.BinaryArtifactRef = refOf(res.binary.Header)
	}
	d, err := putDoc(ctx, p.Stores.docsFor(in.ID), registry.Envs, in.ID, e)
	if err != nil {
		return nil, err
	}
	e.Version = d.Version
	p.printf("Created MCPServerEnv: id=%s version=%d environment_name=%s env_provider_type=%s", e.ID, e.Version, name, e.EnvProviderType)
	return &e, nil
}

func buildSource(in ImageInput) *BuildSource {
	return &BuildSource{GoPackage: in.GoPackage, Dockerfile: in.Dockerfile, Context: in.Context, ImageRef: in.ImageRef}
}

// PutGateway builds and registers the gateway env (`env gateway put`).
// in.GoPackage defaults to ./cmd/agentenv-gateway.
func (p *Putter) PutGateway(ctx context.Context, id string, in ImageInput) (*Env, error) {
	if id == "" {
		id = DefaultGatewayID
	}
	if err := registry.ValidateID(id); err != nil {
		return nil, err
	}
	if in.GoPackage == "" && in.Binary == "" && in.Dockerfile == "" && in.ImageRef == "" {
		in.GoPackage = gatewayPackage
	}
	if err := in.validate(); err != nil {
		return nil, err
	}
	p.printf("Building gateway image (FROM scratch)...")
	img := imagebuild.Image{Env: map[string]string{"MCP_HOST": "0.0.0.0", "MCP_PORT": "18765"}, ExposedPorts: []int{MCPPort},
		Entrypoint: "/agentenv-gateway"}
	artifactID := registry.EnvImageArtifactID(id)
	res, err := p.buildImage(ctx, artifactID, in, img, "gateway image")
	if err != nil {
		return nil, err
	}
	p.printf("Created artifact: id=%s version=%d", res.image.ID, res.image.Version)
	e := Env{ID: id, Type: TypeGatewayServer, DockerImageArtifactRef: refOf(res.image.Header), ImageName: res.image.ImageName,
		Source: buildSource(in)}
	if res.binary != nil {
		e.BinaryArtifactRef = refOf(res.binary.Header)
	}
	d, err := putDoc(ctx, p.Stores.docsFor(id), registry.Envs, id, e)
	if err != nil {
		return nil, err
	}
	e.Version = d.Version
	p.printf("Created GatewayServerEnv: id=%s version=%d", e.ID, e.Version)
	return &e, nil
}

// MultiInput registers a multi env (`env multi put`).
type MultiInput struct {
	ID              string
	MCPServers      []string // id or id:version
	Websites        []string // website env ids (id or id:version); the browser is one
	Name            string   // fixed gateway name; "" = env+4 digits per deploy
	EnvProviderType string
	Description     string
}

// PutMulti pins the member envs and registers the multi env.
func (p *Putter) PutMulti(ctx context.Context, in MultiInput) (*Env, error) {
	if err := registry.ValidateID(in.ID); err != nil {
		return nil, err
	}
	if len(in.MCPServers) == 0 && len(in.Websites) == 0 {
		return nil, &registry.InvalidError{Field: "mcp_server", Reason: "at least one --mcp-server (or --website) is required"}
	}
	if err := CheckTopology(&Env{Type: TypeMulti, EnvProviderType: in.EnvProviderType}); err != nil {
		return nil, err
	}
	if in.Name != "" {
		if err := ValidEnvironmentName(in.Name); err != nil {
			return nil, &registry.InvalidError{Field: "name", Value: in.Name, Reason: err.(*registry.InvalidError).Reason}
		}
	}
	seen := map[string]string{}
	var refs []registry.Ref
	for _, s := range in.MCPServers {
		ref, err := registry.ParseRef(s)
		if err != nil {
			return nil, err
		}
		e, err := p.Stores.getEnv(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("--mcp-server %s: %w", s, err)
		}
		if e.Type != TypeMCPServer {
			return nil, &registry.InvalidError{Field: "mcp_server", Value: s, Reason: "is a " + e.Type + " env, not an mcp_server"}
		}
		if other, dup := seen[e.EnvironmentName]; dup {
			return nil, &registry.InvalidError{Field: "mcp_server", Value: s,
				Reason: fmt.Sprintf("environment_name %q is also used by %s", e.EnvironmentName, other)}
		}
		seen[e.EnvironmentName] = s
		refs = append(refs, registry.Ref{ID: e.ID, Version: e.Version})
	}
	var sites []registry.Ref
	for _, s := range in.Websites {
		ref, err := registry.ParseRef(s)
		if err != nil {
			return nil, err
		}
		e, err := p.Stores.getEnv(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("--website %s: %w", s, err)
		}
		if e.Type != TypeWebsite {
			return nil, &registry.InvalidError{Field: "website", Value: s, Reason: "is a " + e.Type + " env, not a website"}
		}
		if other, dup := seen[e.EnvironmentName]; dup {
			return nil, &registry.InvalidError{Field: "website", Value: s,
				Reason: fmt.Sprintf("environment_name %q is also used by %s", e.EnvironmentName, other)}
		}
		seen[e.EnvironmentName] = s
		sites = append(sites, registry.Ref{ID: e.ID, Version: e.Version})
	}
	e := Env{ID: in.ID, Type: TypeMulti, MCPServerRefs: refs, WebsiteEnvRefs: sites, Name: in.Name, EnvProviderType: ProviderGateway, Description: in.Description}
	d, err := putDoc(ctx, p.Stores.docsFor(in.ID), registry.Envs, in.ID, e)
	if err != nil {
		return nil, err
	}
	e.Version = d.Version
	p.printf("Created MultiEnv: id=%s version=%d mcp_servers=%d websites=%d", e.ID, e.Version, len(refs), len(sites))
	return &e, nil
}

// AgentInput registers an A2A agent (`a2a-agent put`).
type AgentInput struct {
	ID           string
	Image        ImageInput
	EnvVars      map[string]string
	DefaultModel string
	Metadata     map[string]string
}

// PutAgent builds and registers an agent.
func (p *Putter) PutAgent(ctx context.Context, in AgentInput) (*Agent, error) {
	if err := registry.ValidateID(in.ID); err != nil {
		return nil, err
	}
	if err := in.Image.validate(); err != nil {
		return nil, err
	}
	artifactID := registry.AgentImageArtifactID(in.ID)
	p.printf("Building agent image...")
	img := imagebuild.Image{Env: map[string]string{"A2A_HOST": "0.0.0.0", "A2A_PORT": "8000"}, ExposedPorts: []int{A2APort}}
	res, err := p.buildImage(ctx, artifactID, in.Image, img, "image of A2A agent "+in.ID)
	if err != nil {
		return nil, err
	}
	p.printf("Creating image artifact...")
	p.printf("Created artifact: id=%s version=%d", res.image.ID, res.image.Version)
	p.printf("Registering A2A agent...")
	a := Agent{ID: in.ID, Type: TypeA2AAgent, DockerImageArtifactRef: refOf(res.image.Header), ImageName: res.image.ImageName,
		EnvVars: in.EnvVars, DefaultModel: in.DefaultModel, Metadata: metadataOf(in.Metadata), Source: buildSource(in.Image)}
	if res.binary != nil {
		a.BinaryArtifactRef = refOf(res.binary.Header)
	}
	d, err := putDoc(ctx, p.Stores.docsFor(in.ID), registry.A2AAgents, in.ID, a)
	if err != nil {
		return nil, err
	}
	a.Version = d.Version
	p.printf("Created A2A agent: id=%s version=%d image=%s:%d", a.ID, a.Version, artifactID, res.image.Version)
	return &a, nil
}

var (
	cardNameRE = regexp.MustCompile(`EnvCard\{[^}]*Name:\s*"([^"]+)"`)
	envNameDF  = regexp.MustCompile(`(?m)^\s*ENV\s+.*ENVIRONMENT_NAME[= ]"?([A-Za-z0-9-]+)"?`)
)

// DeriveEnvironmentName finds the environment name in the build source:
// the Go card definition (EnvCard{Name: "..."}) of the package or the
// packages it sits in, or an ENV ENVIRONMENT_NAME line of the Dockerfile.
func DeriveEnvironmentName(in ImageInput) (string, error) {
	switch {
	case in.Dockerfile != "":
		b, err := os.ReadFile(in.Dockerfile)
		if err != nil {
			return "", err
		}
		if m := envNameDF.FindSubmatch(b); m != nil {
			return string(m[1]), nil
		}
	case in.GoPackage != "":
		// Absolute first: "." (the package in the working directory) and
		// other relative paths walk up like an absolute one.
		dir, err := filepath.Abs(filepath.Join(in.GoDir, filepath.FromSlash(in.GoPackage)))
		if err != nil {
			break
		}
		for i := 0; i < 3 && dir != filepath.Dir(dir); i++ {
			files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
			for _, f := range files {
				if strings.HasSuffix(f, "_test.go") {
					continue
				}
				b, err := os.ReadFile(f)
				if err != nil {
					continue
				}
				if m := cardNameRE.FindSubmatch(b); m != nil {
					return string(m[1]), nil
				}
			}
			dir = filepath.Dir(dir)
		}
	}
	return "", &registry.InvalidError{Field: "environment_name", Reason: "could not be derived from the source; pass --environment-name"}
}
