package kubernetes_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentenv/agentenv/registry/localimage"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox/kubernetes"
)

// Image resolution against a real registry, without a cluster: podImage
// runs before any object is created.

func imageProvider(t *testing.T, cfg kubernetes.Config, o *kubernetes.Options) *kubernetes.Provider {
	t.Helper()
	o.REST = closedPortREST(t)
	p, err := kubernetes.New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestImagesPassedThrough: what the store does not own, what comes
// without a tarball, and what is pinned by digest go into the Pod as
// written, without contacting the registry (a closed port here).
func TestImagesPassedThrough(t *testing.T) {
	down := strings.TrimPrefix(closedPortREST(t).Host, "http://")
	images := localimage.New(&localimage.Options{StoreID: "s1"})
	p := imageProvider(t, kubernetes.Config{Registry: down}, &kubernetes.Options{Images: images})
	ref, _ := images.Ref("items__env_image", 1)
	withTarball := storeImage(t, ref, nil)
	ctx := context.Background()
	for _, src := range []envdeploy.Source{
		{Ref: "busybox:1", Tarball: withTarball.Tarball},
		{Ref: "ghcr.io/org/tool:2", Tarball: withTarball.Tarball},
		{Ref: ref}, // the store's, but no saved tarball
		{Ref: "localhost:5000/items__env_image@sha256:" + strings.Repeat("0", 64), Tarball: withTarball.Tarball},
	} {
		got, err := kubernetes.PodImage(p, ctx, src)
		if err != nil || got != src.Ref {
			t.Errorf("%s: pod image %q, %v; want it unchanged", src.Ref, got, err)
		}
	}
	// Without an image store nothing is the store's.
	bare := imageProvider(t, kubernetes.Config{Registry: down}, &kubernetes.Options{})
	if got, err := kubernetes.PodImage(bare, ctx, withTarball); err != nil || got != ref {
		t.Errorf("no image store: %q, %v", got, err)
	}
	if p.Pushes()+bare.Pushes() != 0 {
		t.Errorf("%d pushes, want none", p.Pushes()+bare.Pushes())
	}
}

// TestImagePushedOnce: concurrent deploys of one store image push it once;
// the Pod names it by digest in the registry, which defaults to the image
// store's host.
func TestImagePushedOnce(t *testing.T) {
	reg := startRegistry(t, "", "")
	images := localimage.New(&localimage.Options{Host: reg.host, StoreID: "s1"})
	var cache kubernetes.PushCache
	p := imageProvider(t, kubernetes.Config{}, &kubernetes.Options{Images: images, PushCache: &cache})
	if p.Registry() != reg.host {
		t.Fatalf("registry %q, want the image store's host %q", p.Registry(), reg.host)
	}
	ref, _ := images.Ref("items__env_image", 1)
	var opened atomic.Int32
	src := storeImage(t, ref, &opened)
	const n = 8
	got := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = kubernetes.PodImage(p, context.Background(), src) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if got[i] != got[0] {
			t.Errorf("deploy %d got %q, deploy 0 %q", i, got[i], got[0])
		}
	}
	repo, digest, ok := strings.Cut(got[0], "@")
	if !ok || repo != reg.host+"/items__env_image" || !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("pod image %q, want %s/items__env_image@sha256:…", got[0], reg.host)
	}
	if code := reg.manifestStatus(t, "items__env_image", digest); code != 200 {
		t.Errorf("GET manifest %s: HTTP %d", digest, code)
	}
	if puts := reg.manifestPuts.Load(); puts != 1 || p.Pushes() != 1 {
		t.Errorf("%d manifest PUTs, %d pushes; want 1", puts, p.Pushes())
	}
	// Another provider of the process (the next task of an eval) sharing
	// the cache does not push again; one with its own cache does.
	shared := imageProvider(t, kubernetes.Config{}, &kubernetes.Options{Images: images, PushCache: &cache})
	if again, err := kubernetes.PodImage(shared, context.Background(), src); err != nil || again != got[0] {
		t.Fatalf("shared cache: %q, %v; want %q", again, err, got[0])
	}
	if puts := reg.manifestPuts.Load(); puts != 1 {
		t.Errorf("a provider sharing the cache pushed again: %d manifest PUTs", puts)
	}
	own := imageProvider(t, kubernetes.Config{}, &kubernetes.Options{Images: images})
	if again, err := kubernetes.PodImage(own, context.Background(), src); err != nil || again != got[0] {
		t.Fatalf("own cache: %q, %v; want %q", again, err, got[0])
	}
	if puts := reg.manifestPuts.Load(); puts != 2 {
		t.Errorf("a provider with its own cache: %d manifest PUTs, want 2", puts)
	}
}

// TestImagePushFailure: a registry that refuses the push fails it with
// ErrImagePush naming the image and the registry; the failure is not
// remembered, so the next deploy tries again.
func TestImagePushFailure(t *testing.T) {
	reg := startRegistry(t, "robot", "pw")
	images := localimage.New(&localimage.Options{StoreID: "s1"})
	p := imageProvider(t, kubernetes.Config{Registry: reg.host}, &kubernetes.Options{Images: images})
	ref, _ := images.Ref("items__env_image", 1)
	src := storeImage(t, ref, nil)
	for attempt := 1; attempt <= 2; attempt++ {
		_, err := kubernetes.PodImage(p, context.Background(), src)
		if !errors.Is(err, kubernetes.ErrImagePush) || !strings.Contains(err.Error(), ref) || !strings.Contains(err.Error(), "registry "+reg.host) || !strings.Contains(err.Error(), "401") {
			t.Fatalf("attempt %d: error %v, want ErrImagePush naming %s, registry %s and the status", attempt, err, ref, reg.host)
		}
		if p.Pushes() != attempt {
			t.Errorf("attempt %d: %d pushes", attempt, p.Pushes())
		}
	}
}

// TestImagePushUsesPullSecret: the pull secret's credentials for the
// registry host are the push's; a wrong value is refused naming the
// secret, never quoting it.
func TestImagePushUsesPullSecret(t *testing.T) {
	reg := startRegistry(t, "robot", "pw-777")
	images := localimage.New(&localimage.Options{StoreID: "s1"})
	ref, _ := images.Ref("items__env_image", 1)
	src := storeImage(t, ref, nil)
	secrets := secretStore(t, map[string]string{
		"PULL":     dockerConfigJSON(reg.host, "robot", "pw-777"),
		"PULL_URL": `{"auths":{"http://` + reg.host + `/v2/":{"username":"robot","password":"pw-777"}}}`,
		"GARBAGE":  "robot:pw-777-not-json",
	})
	for _, name := range []string{"PULL", "PULL_URL"} {
		p := imageProvider(t, kubernetes.Config{Registry: reg.host, ImagePullSecret: name}, &kubernetes.Options{Images: images, Secrets: secrets})
		if got, err := kubernetes.PodImage(p, context.Background(), src); err != nil || !strings.HasPrefix(got, reg.host+"/items__env_image@sha256:") {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	p := imageProvider(t, kubernetes.Config{Registry: reg.host, ImagePullSecret: "GARBAGE"}, &kubernetes.Options{Images: images, Secrets: secrets})
	_, err := kubernetes.PodImage(p, context.Background(), src)
	if !errors.Is(err, kubernetes.ErrPullSecret) || !strings.Contains(err.Error(), `"GARBAGE"`) || strings.Contains(err.Error(), "pw-777") {
		t.Errorf("error %v, want ErrPullSecret naming GARBAGE without its value", err)
	}
}
