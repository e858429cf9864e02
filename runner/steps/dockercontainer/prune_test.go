package dockercontainer_test

import (
	"archive/tar"
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
	"github.com/agentenv/agentenv/runner/steps/dockercontainer"
)

// TestPruneScopedToStore: a task container a killed run left (labelled as
// run_docker_container labels it, expired) is kept by another store's
// `sandbox prune` and removed by its own store's.
func TestPruneScopedToStore(t *testing.T) {
	dockerOrSkip(t)
	ctx := context.Background()
	storeA := "test-store-a-" + strings.ReplaceAll(t.Name(), "/", "-")
	p, err := docker.New(&docker.Options{StoreID: storeA})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.StoreID() != storeA {
		t.Fatalf("StoreID() = %q, want %q", p.StoreID(), storeA)
	}
	gid := "prune-store-" + time.Now().Format("150405.000000000") + "-containers"
	lbl := dockercontainer.Labels(gid, p.StoreID(), time.Now().Add(-time.Minute))
	if lbl[envdeploy.LabelStore] != storeA {
		t.Fatalf("labels lack the store: %v", lbl)
	}
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for name, body := range map[string]string{"Dockerfile": "FROM scratch\nCOPY f /f\n", "f": "x"} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))})
		_, _ = tw.Write([]byte(body))
	}
	_ = tw.Close()
	ref := "agentenv-test-" + strings.ToLower(strings.ReplaceAll(gid, ".", "-"))
	if err := p.BuildImage(ctx, &ctxTar, "Dockerfile", ref, lbl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := p.Client().ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("remove image: %v", err)
		}
	})
	c, err := p.Client().ContainerCreate(ctx, client.ContainerCreateOptions{Name: gid + "-orphan",
		Config: &container.Config{Image: ref, Cmd: []string{"/f"}, Labels: lbl}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = p.Client().ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	})
	prune := func(store string) []string {
		t.Helper()
		rule := envdeploy.PruneRule{Now: time.Now(), StoreID: store}
		removed, err := p.Prune(ctx, func(l map[string]string) bool { o, _ := rule.Decide(l); return o })
		if err != nil {
			t.Fatalf("prune as %s: %v", store, err)
		}
		return removed
	}
	left := func() []string {
		t.Helper()
		out, err := p.Labelled(ctx, envdeploy.LabelSandbox, gid)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	prune("test-store-b-" + gid)
	if l := left(); len(l) != 1 {
		t.Fatalf("after store B's prune: %v, want the orphan kept", l)
	}
	prune(storeA)
	if l := left(); len(l) != 0 {
		t.Fatalf("after store A's prune: %v left", l)
	}
}
