package artifact

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/agentenv/agentenv/registry"
)

// bundleTime is the modification time of every bundle entry.
var bundleTime = time.Unix(0, 0).UTC()

// bundle writes the members (their bytes verified) into a temporary tar.gz
// (sorted names, fixed mode and time, so equal members give equal bytes)
// and returns an opener and its digest.
func (s *Store) bundle(ctx context.Context, files map[string]*File) (func() (io.ReadCloser, error), digest, func(), error) {
	tmp, err := os.CreateTemp("", "agentenv-bundle-*.tar.gz")
	if err != nil {
		return nil, digest{}, nil, err
	}
	cleanup := func() { tmp.Close(); os.Remove(tmp.Name()) }
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(tmp, h)}
	zw := gzip.NewWriter(cw)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f := files[name]
		rc, err := s.openFile(ctx, f)
		if err != nil {
			cleanup()
			return nil, digest{}, nil, fmt.Errorf("member %s: %w", name, err)
		}
		size := f.Size
		if f.SHA256 == "" { // a document of an older build: trust the object's size
			size, err = s.objectSize(ctx, f.S3URL)
		}
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg, ModTime: bundleTime})
		}
		if err == nil {
			_, err = io.Copy(tw, rc)
		}
		rc.Close()
		if err != nil {
			cleanup()
			return nil, digest{}, nil, fmt.Errorf("member %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		cleanup()
		return nil, digest{}, nil, err
	}
	if err := zw.Close(); err != nil {
		cleanup()
		return nil, digest{}, nil, err
	}
	open := func() (io.ReadCloser, error) {
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		return io.NopCloser(tmp), nil
	}
	return open, digest{SHA256: hex.EncodeToString(h.Sum(nil)), Size: cw.n}, cleanup, nil
}

func (s *Store) objectSize(ctx context.Context, url string) (int64, error) {
	key, err := s.objects.KeyOf(url)
	if err != nil {
		return 0, err
	}
	info, err := s.objects.Stat(ctx, key)
	return info.Size, err
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// OpenUniverseBundle opens the tar.gz of a universe stored with Bundle;
// ErrNotFound when it has none. The bytes are checked against the recorded
// digest as OpenFile's are.
func (s *Store) OpenUniverseBundle(ctx context.Context, ref registry.Ref) (io.ReadCloser, *FileArtifactUniverse, error) {
	u, err := s.GetUniverse(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	if u.BundleS3URL == "" {
		return nil, u, &registry.NotFoundError{Kind: "bundle of universe", ID: u.Ref().String(), Version: -1}
	}
	rc, err := s.open(ctx, u.Ref(), "bundle.tar.gz", u.BundleS3URL, digest{SHA256: u.BundleSHA256, Size: u.BundleSize})
	return rc, u, err
}
