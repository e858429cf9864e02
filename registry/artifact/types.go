package artifact

import (
	"github.com/agentenv/agentenv/internal/jsonobj"
	"github.com/agentenv/agentenv/registry"
)

// Artifact types.
const (
	TypeFile                 = "file"
	TypeFileArtifactUniverse = "file_artifact_universe"
	TypeEnvironment          = "environment"
	TypeEnvironmentUniverse  = "environment_universe"
	TypeDockerImage          = "docker_image"
	TypeSkill                = "skill"
	TypeCLI                  = "cli"
	TypeVMImage              = "vm_image"
)

// DefaultTypeAliases maps legacy type names ([artifacts] type_aliases).
var defaultTypeAliases = map[string]string{
	"service":          TypeEnvironment,
	"service_universe": TypeEnvironmentUniverse,
}

// Header is common to every artifact document. Description is always
// written: the Python framework requires it of most types.
type Header struct {
	ID           string `json:"id"`
	Type         string `json:"type"`
	Version      int    `json:"version"`
	CreatedAtUTC string `json:"created_at_utc,omitempty"`
	Description  string `json:"description"`
	// Extra holds the members of the stored document this build does not
	// know (written by another build); they are written back as they were.
	Extra jsonobj.Extra `json:"-"`
}

// Ref is the pinned reference of the artifact.
func (h Header) Ref() registry.Ref { return registry.Ref{ID: h.ID, Version: h.Version} }

func refOf(h Header) *registry.Ref { r := h.Ref(); return &r }

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

// Skill is an Agent Skill: a folder with a SKILL.md at its root (YAML
// front matter with name and description, then instructions) and any
// scripts, references or assets beside it. The files are a
// file_artifact_universe (SkillFilesID, pinned by SkillFilesRef); the
// front matter is copied into the document.
type Skill struct {
	Header
	SkillFilesID string `json:"skill_files_id"`
	// SkillFilesRef pins the universe's version (nil in documents of the
	// Python framework, which name only the id: the latest is read).
	SkillFilesRef *registry.Ref `json:"skill_files_ref,omitempty"`
	// SkillS3URL is the universe's tar.gz of every file (the Python
	// framework names an object-store prefix here).
	SkillS3URL             string            `json:"skill_s3_url"`
	AgentSkillsSpecVersion string            `json:"agent_skills_spec_version"`
	SkillName              string            `json:"skill_name"`
	License                string            `json:"license,omitempty"`
	Compatibility          string            `json:"compatibility,omitempty"`
	AllowedTools           string            `json:"allowed_tools,omitempty"`
	SkillMetadata          map[string]string `json:"skill_metadata,omitempty"`
}

// CLI is a command-line tool: an executable or script (Entrypoint) and
// the files it needs beside it, installed on PATH as CommandName. The
// files are a file_artifact_universe (CLIFilesID, pinned by CLIFilesRef).
type CLI struct {
	Header
	CLIFilesID  string        `json:"cli_files_id"`
	CLIFilesRef *registry.Ref `json:"cli_files_ref,omitempty"` // as Skill.SkillFilesRef
	// CLIS3URL is the universe's tar.gz of every file.
	CLIS3URL    string `json:"cli_s3_url"`
	Entrypoint  string `json:"entrypoint"` // relative path of the executable within the files
	CommandName string `json:"command_name"`
	// EnvID and EnvVersion name the env the tool was generated from, if any.
	EnvID      string `json:"env_id,omitempty"`
	EnvVersion int    `json:"env_version,omitempty"`
}

// VMImage is a virtual machine disk image. It names an image a sandbox
// provider already knows (ImageName, ECRURL), holds the disk image file
// itself in the object store (DiskImageObjectURL), or both; the sizing
// fields are what the image needs to boot (0 = the deploying env's
// default).
type VMImage struct {
	Header
	ECRURL      string  `json:"ecr_url,omitempty"`
	ImageName   string  `json:"image_name,omitempty"`
	OS          string  `json:"os,omitempty"`
	DiskSizeGB  float64 `json:"disk_size_gb,omitempty"`
	CPU         float64 `json:"cpu,omitempty"`
	MemoryMB    int     `json:"memory_mb,omitempty"`
	SandboxType string  `json:"sandbox_type,omitempty"`
	// The disk image file, when the artifact holds one (not in the
	// Python framework, whose vm_image only names images).
	Filename           string `json:"filename,omitempty"`
	ContentType        string `json:"content_type,omitempty"`
	DiskImageObjectURL string `json:"disk_image_object_url,omitempty"`
	DiskImageS3URL     string `json:"disk_image_s3_url,omitempty"` // twin
	DiskImageSHA256    string `json:"disk_image_sha256,omitempty"`
	DiskImageSize      int64  `json:"disk_image_size_bytes,omitempty"`
}
