package ociregistry_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/agentenv/agentenv/registry/ociregistry"
)

func start(t *testing.T, dir string) *ociregistry.Server {
	t.Helper()
	s, err := ociregistry.Start("127.0.0.1:0", dir, &ociregistry.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func manifestDigest(t *testing.T, addr, repo, tag string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v2/"+repo+"/manifests/"+tag, nil)
	req.Header.Set("Accept", "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Docker-Content-Digest")
}

// A gzipped docker-save tarball (what the object store keeps) is pushed,
// served, and still served after a restart on the same directory.
func TestPushServeRestart(t *testing.T) {
	dir := t.TempDir()
	img, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("localhost:5000/items__env_image:v1")
	var tarGz bytes.Buffer
	zw := gzip.NewWriter(&tarGz)
	if err := tarball.Write(tag, img, zw); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(tarGz.Bytes())), nil }

	s := start(t, dir)
	ref := s.Addr() + "/items__env_image:v1"
	digest, err := ociregistry.PushTarball(context.Background(), open, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if digest != want.String() {
		t.Fatalf("pushed digest %s, want %s", digest, want)
	}
	if code, got := manifestDigest(t, s.Addr(), "items__env_image", "v1"); code != 200 || got != digest {
		t.Fatalf("GET manifest = %d %s, want 200 %s", code, got, digest)
	}
	// Pushing again is idempotent (blobs already there).
	if _, err := ociregistry.PushTarball(context.Background(), open, ref, nil); err != nil {
		t.Fatalf("second push: %v", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	s2 := start(t, dir)
	if code, got := manifestDigest(t, s2.Addr(), "items__env_image", "v1"); code != 200 || got != digest {
		t.Fatalf("after restart GET manifest = %d %s, want 200 %s", code, got, digest)
	}
	layers, _ := img.Layers()
	ld, _ := layers[0].Digest()
	resp, err := http.Get("http://" + s2.Addr() + "/v2/items__env_image/blobs/" + ld.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("layer blob after restart: HTTP %d", resp.StatusCode)
	}
	if code, _ := manifestDigest(t, s2.Addr(), "nope", "v1"); code != 404 {
		t.Fatalf("unknown repository: HTTP %d, want 404", code)
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	open := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("not a tarball")), nil }
	for _, ref := range []string{"", "noslash", "host/repo", "host/repo:"} {
		if _, err := ociregistry.PushTarball(ctx, open, ref, nil); err == nil || !strings.Contains(err.Error(), "reference") {
			t.Errorf("PushTarball(%q): %v", ref, err)
		}
	}
	s := start(t, t.TempDir())
	if _, err := ociregistry.PushTarball(ctx, open, s.Addr()+"/x:v1", nil); err == nil || !strings.Contains(err.Error(), "tarball") {
		t.Errorf("garbage tarball: %v", err)
	}
	if _, err := ociregistry.Start("127.0.0.1:0", "", nil); err == nil {
		t.Error("Start with an empty dir succeeded")
	}
	// The address is in use: a clear error naming it.
	if _, err := ociregistry.Start(s.Addr(), t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), s.Addr()) {
		t.Errorf("Start on a busy address: %v", err)
	}
}

func TestServeStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ociregistry.Serve(ctx, "127.0.0.1:0", t.TempDir()) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}
}
