package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
)

// ImageFactory returns an image store whose registry host is host and
// whose store id is storeID.
type ImageFactory func(t *testing.T, host, storeID string) registry.ImageStore

// RunImageStore runs the ImageStore conformance suite.
func RunImageStore(t *testing.T, newStore ImageFactory) {
	t.Run("Refs", func(t *testing.T) {
		s := newStore(t, "localhost:5000", "")
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
	t.Run("StoreIDs", func(t *testing.T) {
		// Two stores number their versions alike; their refs never meet.
		a := newStore(t, "localhost:5000", "0123456789abcdef")
		b := newStore(t, "localhost:5000", "fedcba9876543210")
		ra, errA := a.Ref("items__env_image", 1)
		rb, errB := b.Ref("items__env_image", 1)
		if errA != nil || errB != nil || ra == rb || a.StoreID() != "0123456789abcdef" {
			t.Fatalf("refs of two stores: %q, %q (%v, %v)", ra, rb, errA, errB)
		}
		if !strings.HasSuffix(ra, ":v1-0123456789abcdef") || !a.Owns(ra) {
			t.Fatalf("Ref with a store id = %q, want the tag v1-0123456789abcdef", ra)
		}
	})
}
