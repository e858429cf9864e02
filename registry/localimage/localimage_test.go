package localimage_test

import (
	"context"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/localimage"
	"github.com/agentenv/agentenv/registry/storetest"
)

func TestConformance(t *testing.T) {
	storetest.RunImageStore(t, func(t *testing.T, host string) registry.ImageStore {
		objs, err := fsobject.New(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return localimage.New(objs, &localimage.Options{Host: host})
	})
}

func TestPrefixes(t *testing.T) {
	objs, _ := fsobject.New(t.TempDir(), nil)
	s := localimage.New(objs, &localimage.Options{Host: "127.0.0.1:5000", RepositoryPrefix: "/agentenv/", KeyPrefix: "fixtures"})
	ref, err := s.Ref("items__env_image", 2)
	if err != nil || ref != "127.0.0.1:5000/agentenv/items__env_image:v2" {
		t.Fatalf("Ref = %q, %v", ref, err)
	}
	if s.Owns("127.0.0.1:5000/other/x:v1") {
		t.Fatal("Owns a ref outside the prefix")
	}
	info, err := s.PutTarball(context.Background(), "items__env_image", 2, nil)
	if err == nil {
		t.Fatalf("nil reader accepted: %+v", info)
	}
}
