// Package localimage is the local ImageStore: it names images
// <host>/<prefix/>repository:v<N> (default host localhost:5000, anonymous)
// and keeps each image's tarball (docker save format, gzipped) in the object
// store at artifacts/docker_image/<id-segment>/<N>/image.tar.gz, which is
// what the local Docker sandbox loads when the engine lacks the image
// (runner.md §10.5). Nothing is pulled, ever.
//
//	images := localimage.New(objects, nil)
//	ref, _ := images.Ref("items__env_image", 1) // "localhost:5000/items__env_image:v1"
package localimage

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentenv/agentenv/registry"
)

// DefaultHost is the local registry (registry/ociregistry serves it).
const DefaultHost = "localhost:5000"

// Options tunes New. A nil *Options means defaults.
type Options struct {
	Host             string // "" = DefaultHost
	RepositoryPrefix string // e.g. "agentenv"; "" = none
	KeyPrefix        string // object-key prefix (AGENT_ENV_FIXTURE_PREFIX)
}

// Store is the local ImageStore.
type Store struct {
	objects registry.ObjectStore
	opt     Options
}

var _ registry.ImageStore = (*Store)(nil)

// New returns a store keeping tarballs in objects.
func New(objects registry.ObjectStore, o *Options) *Store {
	if objects == nil {
		panic("localimage.New: nil object store")
	}
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Host == "" {
		opt.Host = DefaultHost
	}
	opt.RepositoryPrefix = strings.Trim(opt.RepositoryPrefix, "/")
	return &Store{objects: objects, opt: opt}
}

// Host is the registry host.
func (s *Store) Host() string { return s.opt.Host }

func (s *Store) check(repository string, version int) error {
	if !registry.ValidRepository(repository) {
		return &registry.InvalidError{Field: "repository", Value: repository,
			Reason: "not a valid OCI repository name (lowercase; use registry.RepositoryName)"}
	}
	if version < 1 {
		return &registry.InvalidError{Field: "version", Value: strconv.Itoa(version), Reason: "must be >= 1"}
	}
	return nil
}

// Ref is <host>/<prefix/>repository:v<version>.
func (s *Store) Ref(repository string, version int) (string, error) {
	if err := s.check(repository, version); err != nil {
		return "", err
	}
	p := ""
	if s.opt.RepositoryPrefix != "" {
		p = s.opt.RepositoryPrefix + "/"
	}
	return fmt.Sprintf("%s/%s%s:v%d", s.opt.Host, p, repository, version), nil
}

// Owns reports whether ref names an image on this store's host (and
// under its prefix).
func (s *Store) Owns(ref string) bool {
	p := s.opt.Host + "/"
	if s.opt.RepositoryPrefix != "" {
		p += s.opt.RepositoryPrefix + "/"
	}
	return strings.HasPrefix(ref, p) && len(ref) > len(p)
}

func (s *Store) key(repository string, version int) string {
	return registry.ArtifactKey(s.opt.KeyPrefix, "docker_image", repository, version, "image.tar.gz")
}

// PutTarball stores the gzipped docker-save tarball; write-once.
func (s *Store) PutTarball(ctx context.Context, repository string, version int, r io.Reader) (registry.ObjectInfo, error) {
	if err := s.check(repository, version); err != nil {
		return registry.ObjectInfo{}, err
	}
	return s.objects.Put(ctx, s.key(repository, version), r, &registry.ObjectPutOptions{ContentType: "application/gzip"})
}

// OpenTarball opens the tarball of (repository, version).
func (s *Store) OpenTarball(ctx context.Context, repository string, version int) (io.ReadCloser, registry.ObjectInfo, error) {
	if err := s.check(repository, version); err != nil {
		return nil, registry.ObjectInfo{}, err
	}
	return s.objects.Open(ctx, s.key(repository, version))
}
