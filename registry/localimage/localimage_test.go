package localimage_test

import (
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/localimage"
	"github.com/agentenv/agentenv/registry/storetest"
)

func TestConformance(t *testing.T) {
	storetest.RunImageStore(t, func(t *testing.T, host, storeID string) registry.ImageStore {
		return localimage.New(&localimage.Options{Host: host, StoreID: storeID})
	})
}

func TestPrefixes(t *testing.T) {
	s := localimage.New(&localimage.Options{Host: "127.0.0.1:5000", RepositoryPrefix: "/agentenv/", StoreID: "0123456789abcdef"})
	ref, err := s.Ref("items__env_image", 2)
	if err != nil || ref != "127.0.0.1:5000/agentenv/items__env_image:v2-0123456789abcdef" {
		t.Fatalf("Ref = %q, %v", ref, err)
	}
	if s.Owns("127.0.0.1:5000/other/x:v1") {
		t.Fatal("Owns a ref outside the prefix")
	}
}
