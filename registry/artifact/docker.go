package artifact

import (
	"context"
	"fmt"
	"io"

	"github.com/agentenv/agentenv/registry"
)

// DockerImageInput describes an image artifact to create.
type DockerImageInput struct {
	// ImageName is the image reference; "" = derived from images (the ref of
	// this version) when an ImageStore is given to PutDockerImage.
	ImageName      string
	Description    string
	Tarball        io.Reader // gzipped docker-save tarball; nil = none (--image-ref)
	BuildContext   io.Reader // gzipped tar of the build context; optional
	DockerfilePath string
	Platform       string
	SourceDigest   string
}

// PutDockerImage stores a new version of docker_image artifact id: the
// tarball at artifacts/docker_image/<id>/<v>/image.tar.gz (the key
// ImageStore.OpenTarball reads) and the build context beside it. images may
// be nil when in.ImageName is set.
func (s *Store) PutDockerImage(ctx context.Context, id string, in DockerImageInput, images registry.ImageStore) (*DockerImage, error) {
	if in.ImageName == "" && images == nil {
		return nil, &registry.InvalidError{Field: "image_name", Reason: "required when no image store names it"}
	}
	if in.ImageName == "" && !registry.ValidRepository(id) {
		return nil, &registry.InvalidError{Field: "id", Value: id, Reason: "not a valid OCI repository name; pass ImageName (see registry.RepositoryName)"}
	}
	var payloads []payload
	for _, p := range []struct {
		name string
		r    io.Reader
	}{{"image.tar.gz", in.Tarball}, {"build-context.tar.gz", in.BuildContext}} {
		if p.r == nil {
			continue
		}
		open, _, _, cleanup, err := spool(p.r)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		payloads = append(payloads, payload{name: p.name, contentType: "application/gzip", open: open})
	}
	var refErr error
	d, err := s.put(ctx, TypeDockerImage, id, payloads, func(v int, urls map[string]string) any {
		name := in.ImageName
		if name == "" {
			name, refErr = images.Ref(id, v)
		}
		return DockerImage{Header: Header{Type: TypeDockerImage, Description: in.Description}, ImageName: name,
			TarGzObjectURL: urls["image.tar.gz"], TarGzS3URL: urls["image.tar.gz"],
			BuildContextObjectURL: urls["build-context.tar.gz"], BuildContextS3URL: urls["build-context.tar.gz"],
			DockerfilePath: in.DockerfilePath, Platform: in.Platform, SourceDigest: in.SourceDigest}
	})
	if refErr != nil {
		return nil, fmt.Errorf("docker image %s: %w", id, refErr)
	}
	if err != nil {
		return nil, err
	}
	var di DockerImage
	return &di, d.Decode(&di)
}

// GetDockerImage reads a docker_image artifact.
func (s *Store) GetDockerImage(ctx context.Context, ref registry.Ref) (*DockerImage, error) {
	var di DockerImage
	if err := s.getAs(ctx, ref, TypeDockerImage, &di); err != nil {
		return nil, err
	}
	return &di, nil
}

// OpenImageTarball opens the tarball of a docker_image artifact;
// ErrNotFound when the artifact has none (registered with --image-ref).
func (s *Store) OpenImageTarball(ctx context.Context, ref registry.Ref) (io.ReadCloser, *DockerImage, error) {
	di, err := s.GetDockerImage(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	u := di.TarGzObjectURL
	if u == "" {
		u = di.TarGzS3URL
	}
	if u == "" {
		return nil, di, &registry.NotFoundError{Kind: "image tarball of artifact", ID: di.Ref().String(), Version: -1}
	}
	rc, _, err := registry.OpenURL(ctx, s.objects, u)
	if err != nil {
		return nil, di, fmt.Errorf("docker image %s: %w", di.Ref(), err)
	}
	return rc, di, nil
}
