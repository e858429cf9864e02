package artifact

import (
	"context"
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
// tarball (image.tar.gz) and the build context beside it, under the put's
// own upload. images may be nil when in.ImageName is set.
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
		open, dg, cleanup, err := spool(p.r)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		payloads = append(payloads, payload{name: p.name, contentType: "application/gzip", open: open, digest: dg})
	}
	d, err := s.put(ctx, TypeDockerImage, id, payloads, func(v int, objs map[string]stored) (any, error) {
		name := in.ImageName
		if name == "" {
			var err error
			if name, err = images.Ref(id, v); err != nil {
				return nil, err
			}
		}
		tar, bc := objs["image.tar.gz"], objs["build-context.tar.gz"]
		return DockerImage{Header: Header{Type: TypeDockerImage, Description: in.Description}, ImageName: name,
			TarGzObjectURL: tar.url, TarGzS3URL: tar.url, TarGzSHA256: tar.SHA256, TarGzSize: tar.Size,
			BuildContextObjectURL: bc.url, BuildContextS3URL: bc.url, BuildContextSHA256: bc.SHA256, BuildContextSize: bc.Size,
			DockerfilePath: in.DockerfilePath, Platform: in.Platform, SourceDigest: in.SourceDigest}, nil
	})
	if err != nil {
		return nil, err
	}
	var di DockerImage
	return &di, d.Decode(&di)
}

// GetDockerImage reads a docker_image artifact.
func (s *Store) GetDockerImage(ctx context.Context, ref registry.Ref) (*DockerImage, error) {
	return get[DockerImage](ctx, s, ref, TypeDockerImage)
}

// OpenImageTarball opens the tarball of a docker_image artifact;
// ErrNotFound when the artifact has none (registered with --image-ref).
// The bytes are checked against the recorded digest as OpenFile's are.
func (s *Store) OpenImageTarball(ctx context.Context, ref registry.Ref) (io.ReadCloser, *DockerImage, error) {
	di, err := s.GetDockerImage(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	rc, err := s.openOne(ctx, di.Ref(), "image tarball of artifact", "image.tar.gz",
		digest{SHA256: di.TarGzSHA256, Size: di.TarGzSize}, di.TarGzObjectURL, di.TarGzS3URL)
	if err != nil {
		return nil, di, err
	}
	return rc, di, nil
}
