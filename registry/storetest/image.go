package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
)

// ImageFactory returns an empty image store whose registry host is host.
type ImageFactory func(t *testing.T, host string) registry.ImageStore

// RunImageStore runs the ImageStore conformance suite.
func RunImageStore(t *testing.T, newStore ImageFactory) {
	ctx := context.Background()
	t.Run("Refs", func(t *testing.T) {
		s := newStore(t, "localhost:5000")
		if s.Host() != "localhost:5000" {
			t.Fatalf("Host = %s", s.Host())
		}
		for _, c := range []struct {
			repo string
			v    int
			want string
		}{
			{registry.EnvImageArtifactID("items"), 1, "localhost:5000/items__env_image:v1"},
			{registry.AgentImageArtifactID("a2a-default"), 3, "localhost:5000/a2a-agent-a2a-default:v3"},
		} {
			got, err := s.Ref(c.repo, c.v)
			if err != nil || !strings.HasSuffix(got, strings.TrimPrefix(c.want, "localhost:5000/")) || !strings.HasPrefix(got, "localhost:5000/") {
				t.Errorf("Ref(%s, %d) = %q, %v; want %s (prefix allowed)", c.repo, c.v, got, err, c.want)
			}
			if !s.Owns(got) {
				t.Errorf("Owns(%s) = false", got)
			}
		}
		for _, foreign := range []string{"docker.io/library/alpine:3", "localhost:5001/x:v1", "items:v1"} {
			if s.Owns(foreign) {
				t.Errorf("Owns(%s) = true", foreign)
			}
		}
		for _, bad := range []string{"", "Items", "a b", "@local/x", "x/", "-x", "x__"} {
			if _, err := s.Ref(bad, 1); !errors.Is(err, registry.ErrInvalid) {
				t.Errorf("Ref(%q): %v, want ErrInvalid", bad, err)
			}
		}
		if _, err := s.Ref("items", 0); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("Ref version 0: %v", err)
		}
		if r := registry.RepositoryName("@local/agentenv-framework/Hello World"); !registry.ValidRepository(r) {
			t.Errorf("RepositoryName gave an invalid name %q", r)
		} else if _, err := s.Ref(r, 1); err != nil {
			t.Errorf("Ref(RepositoryName(@local...)): %v", err)
		}
	})
	t.Run("Tarballs", func(t *testing.T) {
		s := newStore(t, "localhost:5000")
		tar := bytes.Repeat([]byte{0x1f, 0x8b, 8, 0}, 1000)
		info, err := s.PutTarball(ctx, "items__env_image", 1, bytes.NewReader(tar))
		if err != nil || info.Size != int64(len(tar)) || !strings.HasSuffix(info.Key, "artifacts/docker_image/items__env_image/1/image.tar.gz") {
			t.Fatalf("PutTarball = %+v, %v", info, err)
		}
		rc, _, err := s.OpenTarball(ctx, "items__env_image", 1)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, tar) {
			t.Fatal("tarball round trip differs")
		}
		if _, err := s.PutTarball(ctx, "items__env_image", 1, bytes.NewReader(tar)); !errors.Is(err, registry.ErrAlreadyExists) {
			t.Fatalf("second PutTarball: %v, want ErrAlreadyExists", err)
		}
		if _, _, err := s.OpenTarball(ctx, "items__env_image", 2); !errors.Is(err, registry.ErrNotFound) {
			t.Fatalf("OpenTarball missing version: %v", err)
		}
	})
}
