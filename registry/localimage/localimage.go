// Package localimage is the local ImageStore: it names images
// <host>/<prefix/>repository:v<N>-<store id> (default host localhost:5000,
// anonymous). The tarballs are the docker_image artifacts' (registry/artifact);
// the local Docker sandbox loads them when the engine lacks the image.
// Nothing is pulled, ever.
//
//	images := localimage.New(&localimage.Options{StoreID: set.StoreID()})
//	ref, _ := images.Ref("items__env_image", 1) // "localhost:5000/items__env_image:v1-3f2a9c1e0b4d5e6f"
package localimage

import (
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
	// StoreID (registry.StoreID) ends every tag: v<N>-<store id>. "" gives
	// the plain v<N> of older builds (tests, fixtures).
	StoreID string
}

// Store is the local ImageStore.
type Store struct {
	opt Options
}

var _ registry.ImageStore = (*Store)(nil)

// New returns a store naming images as o says.
func New(o *Options) *Store {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Host == "" {
		opt.Host = DefaultHost
	}
	opt.RepositoryPrefix = strings.Trim(opt.RepositoryPrefix, "/")
	return &Store{opt: opt}
}

// Host is the registry host.
func (s *Store) Host() string { return s.opt.Host }

// StoreID is the store id that ends every tag ("" = none).
func (s *Store) StoreID() string { return s.opt.StoreID }

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

// Ref is <host>/<prefix/>repository:v<version>-<store id> (or :v<version>
// without a store id).
func (s *Store) Ref(repository string, version int) (string, error) {
	if err := s.check(repository, version); err != nil {
		return "", err
	}
	p := ""
	if s.opt.RepositoryPrefix != "" {
		p = s.opt.RepositoryPrefix + "/"
	}
	tag := "v" + strconv.Itoa(version)
	if s.opt.StoreID != "" {
		tag += "-" + s.opt.StoreID
	}
	return s.opt.Host + "/" + p + repository + ":" + tag, nil
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
