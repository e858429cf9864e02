package artifact

import "github.com/agentenv/agentenv/registry"

// Artifact types.
const (
	TypeFile                 = "file"
	TypeFileArtifactUniverse = "file_artifact_universe"
	TypeEnvironment          = "environment"
	TypeEnvironmentUniverse  = "environment_universe"
	TypeDockerImage          = "docker_image"
)

// DefaultTypeAliases maps legacy type names ([artifacts] type_aliases).
var defaultTypeAliases = map[string]string{
	"service":          TypeEnvironment,
	"service_universe": TypeEnvironmentUniverse,
}

// Header is common to every artifact document.
type Header struct {
	ID           string `json:"id"`
	Type         string `json:"type"`
	Version      int    `json:"version"`
	CreatedAtUTC string `json:"created_at_utc,omitempty"`
	Description  string `json:"description,omitempty"`
}

// Ref is the pinned reference of the artifact.
func (h Header) Ref() registry.Ref { return registry.Ref{ID: h.ID, Version: h.Version} }

// File is one file.
type File struct {
	Header
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	// S3URL is the object URL (legacy name kept for compatibility).
	S3URL  string `json:"s3_url"`
	Size   int64  `json:"size_bytes"`
	SHA256 string `json:"sha256"`
}

// FileArtifactUniverse bundles pinned file artifacts under file names
// (which may contain '/').
type FileArtifactUniverse struct {
	Header
	FileArtifactIDs  map[string]string       `json:"file_artifact_ids"`
	FileArtifactRefs map[string]registry.Ref `json:"file_artifact_refs"`
	BundleS3URL      string                  `json:"bundle_s3_url,omitempty"`
	// BundleSHA256 and BundleSize record the bundle's bytes (not in the
	// reference; absent in documents of older builds).
	BundleSHA256 string `json:"bundle_sha256,omitempty"`
	BundleSize   int64  `json:"bundle_size_bytes,omitempty"`
}

// Environment is the data of one environment (service), loaded with
// data/add: a file artifact plus the environment it is for.
type Environment struct {
	Header
	EnvironmentName string       `json:"environment_name"`
	ServiceName     string       `json:"service_name"` // twin of EnvironmentName
	FileArtifactRef registry.Ref `json:"file_artifact_ref"`
}

// EnvironmentUniverse bundles pinned environment artifacts.
type EnvironmentUniverse struct {
	Header
	EnvironmentArtifactRefs []registry.Ref          `json:"environment_artifact_refs"`
	ServiceArtifactRefs     []registry.Ref          `json:"service_artifact_refs"` // twin
	MetadataRefs            map[string]registry.Ref `json:"metadata_refs"`
}

// DockerImage is a container image kept as a tarball in the object store.
type DockerImage struct {
	Header
	ImageName             string `json:"image_name"` // the registry ref, e.g. localhost:5000/items__env_image:v1
	TarGzObjectURL        string `json:"tar_gz_object_url,omitempty"`
	TarGzS3URL            string `json:"tar_gz_s3_url,omitempty"` // twin
	BuildContextObjectURL string `json:"build_context_object_url,omitempty"`
	BuildContextS3URL     string `json:"build_context_s3_url,omitempty"` // twin
	// TarGzSHA256 and TarGzSize record the tarball's bytes, and the
	// BuildContext pair the build context's (not in the reference; absent
	// in documents of older builds).
	TarGzSHA256        string `json:"tar_gz_sha256,omitempty"`
	TarGzSize          int64  `json:"tar_gz_size_bytes,omitempty"`
	BuildContextSHA256 string `json:"build_context_sha256,omitempty"`
	BuildContextSize   int64  `json:"build_context_size_bytes,omitempty"`
	DockerfilePath     string `json:"dockerfile_path,omitempty"`
	Platform           string `json:"platform,omitempty"`
	SourceDigest       string `json:"source_digest,omitempty"`
}
