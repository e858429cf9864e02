package envdeploytest

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/runner/envdeploy"
)

// ImageLoader is the part of a Docker provider LoadEchoImage needs.
type ImageLoader interface {
	LoadImage(ctx context.Context, r io.Reader) error
	RemoveImage(ctx context.Context, ref string) error
}

// LoadEchoImage puts the echo env into the engine as a FROM scratch image
// tagged ref, removed again at the test's cleanup.
func LoadEchoImage(t testing.TB, p ImageLoader, ref string) {
	t.Helper()
	img, err := imagebuild.Scratch(imagebuild.Image{Binary: Build(t).Echo, ExposedPorts: []int{envdeploy.MCPPort}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := imagebuild.WriteTarball(&buf, ref, img); err != nil {
		t.Fatal(err)
	}
	if err := p.LoadImage(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.RemoveImage(context.Background(), ref) })
}
