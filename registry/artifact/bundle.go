package artifact

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/agentenv/agentenv/registry"
)

// bundleTime is the modification time of every bundle entry.
var bundleTime = time.Unix(0, 0).UTC()

// bundle writes the members into a temporary tar.gz (sorted names, fixed
// mode and time, so equal members give equal bytes) and returns an opener.
func (s *Store) bundle(ctx context.Context, files map[string]*File) (func() (io.ReadCloser, error), func(), error) {
	tmp, err := os.CreateTemp("", "agentenv-bundle-*.tar.gz")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { tmp.Close(); os.Remove(tmp.Name()) }
	zw := gzip.NewWriter(tmp)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f := files[name]
		key, err := s.objects.KeyOf(f.S3URL)
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		rc, info, err := s.objects.Open(ctx, key)
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("member %s: %w", name, err)
		}
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: info.Size, Typeflag: tar.TypeReg, ModTime: bundleTime}
		if err := tw.WriteHeader(hdr); err == nil {
			_, err = io.Copy(tw, rc)
		}
		rc.Close()
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("member %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		cleanup()
		return nil, nil, err
	}
	if err := zw.Close(); err != nil {
		cleanup()
		return nil, nil, err
	}
	open := func() (io.ReadCloser, error) {
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		return io.NopCloser(tmp), nil
	}
	return open, cleanup, nil
}

// OpenUniverseBundle opens the tar.gz of a universe stored with Bundle;
// ErrNotFound when it has none.
func (s *Store) OpenUniverseBundle(ctx context.Context, ref registry.Ref) (io.ReadCloser, *FileArtifactUniverse, error) {
	u, err := s.GetUniverse(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	if u.BundleS3URL == "" {
		return nil, u, &registry.NotFoundError{Kind: "bundle of universe", ID: u.Ref().String(), Version: -1}
	}
	rc, _, err := registry.OpenURL(ctx, s.objects, u.BundleS3URL)
	return rc, u, err
}
