package kubernetes_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentenv/agentenv/registry/localimage"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/kubernetes"
)

// Tier 1 image tests: store images pushed to a real registry on loopback
// and named by digest in Pods of a real API server, pull Secrets made per
// group and removed with it.

// imageCluster is a provider of a fresh namespace pushing the store's
// images to reg, with pullSecret (if any) looked up in secrets.
func imageCluster(t *testing.T, reg *testRegistry, pullSecret string, secrets map[string]string) (*kubernetes.Provider, string, *localimage.Store) {
	t.Helper()
	c := testCluster(t)
	ns := namespace(t, c)
	images := localimage.New(&localimage.Options{StoreID: "s1"})
	cfg := kubernetes.Config{Namespace: ns, Registry: reg.host, ImagePullSecret: pullSecret}
	p, err := kubernetes.New(cfg, &kubernetes.Options{REST: c.REST(c.AdminToken), StoreID: "store-a", Images: images, Secrets: secretStore(t, secrets)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, ns, images
}

func deployGroup(t *testing.T, p *kubernetes.Provider, inst string, ws ...envdeploy.Workload) (envdeploy.Group, error) {
	t.Helper()
	ctx := context.Background()
	g, err := p.CreateGroup(ctx, envdeploy.GroupSpec{Labels: envdeploy.OwnerLabels(inst, true, time.Now().Add(time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if _, err := g.Run(ctx, w); err != nil {
			return g, err
		}
	}
	return g, nil
}

func podImage(t *testing.T, p *kubernetes.Provider, g envdeploy.Group, workload string) *corev1.Pod {
	t.Helper()
	pods, err := p.Clientset().CoreV1().Pods(p.Namespace()).List(context.Background(),
		metav1.ListOptions{LabelSelector: kubernetes.LabelSandbox + "=" + g.ID() + "," + kubernetes.LabelWorkload + "=" + workload})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods of %s/%s: %v %v", g.ID(), workload, pods, err)
	}
	return &pods.Items[0]
}

// TestStoreImageDeploy: an env instance whose server is a store image runs
// a Pod naming <registry>/<repo>@sha256:…, which the registry serves; a
// second instance does not push again; an image of another registry is
// passed through; each group has the pull Secret, gone after teardown.
func TestStoreImageDeploy(t *testing.T) {
	testCluster(t) // skips before a registry starts when there is no cluster
	reg := startRegistry(t, "robot", "pw-42")
	pull := dockerConfigJSON(reg.host, "robot", "pw-42")
	p, ns, images := imageCluster(t, reg, "PULL", map[string]string{"PULL": pull})
	ref, _ := images.Ref("items__env_image", 1)
	var opened atomic.Int32
	server := envdeploy.Workload{Name: "items", Role: "mcp_server", Port: envdeploy.MCPPort, PortEnv: "MCP_PORT", Source: storeImage(t, ref, &opened)}
	other := envdeploy.Workload{Name: "side", Role: "mcp_server", Port: 80, Source: envdeploy.Source{Ref: "busybox:1", What: "side"}}
	g1, err := deployGroup(t, p, "inst-1", server, other)
	if err != nil {
		t.Fatal(err)
	}
	pod := podImage(t, p, g1, "items")
	img := pod.Spec.Containers[0].Image
	repo, digest, ok := strings.Cut(img, "@")
	if !ok || repo != reg.host+"/items__env_image" || !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("pod image %q, want %s/items__env_image@sha256:…", img, reg.host)
	}
	if code := reg.manifestStatus(t, "items__env_image", digest); code != 200 {
		t.Errorf("GET /v2/items__env_image/manifests/%s: HTTP %d, want 200", digest, code)
	}
	if got := podImage(t, p, g1, "side").Spec.Containers[0].Image; got != "busybox:1" {
		t.Errorf("another registry's image became %q", got)
	}
	g2, err := deployGroup(t, p, "inst-2", server)
	if err != nil {
		t.Fatal(err)
	}
	if got := podImage(t, p, g2, "items").Spec.Containers[0].Image; got != img {
		t.Errorf("second instance's image %q, want %q", got, img)
	}
	if puts := reg.manifestPuts.Load(); puts != 1 || opened.Load() == 0 {
		t.Errorf("%d manifest PUTs for two instances (tarball opened %d times), want 1", puts, opened.Load())
	}
	cs := p.Clientset()
	ctx := context.Background()
	for _, g := range []envdeploy.Group{g1, g2} {
		name := kubernetes.PullSecretName(g.ID())
		sec, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pull secret of %s: %v", g.ID(), err)
		}
		if sec.Type != corev1.SecretTypeDockerConfigJson || string(sec.Data[corev1.DockerConfigJsonKey]) != pull || sec.Labels[kubernetes.LabelSandbox] != g.ID() {
			t.Errorf("pull secret %s: type %s, labels %v, data %q", name, sec.Type, sec.Labels, sec.Data[corev1.DockerConfigJsonKey])
		}
		for _, w := range []string{"items", "side"} {
			if w == "side" && g == g2 {
				continue
			}
			if ips := podImage(t, p, g, w).Spec.ImagePullSecrets; len(ips) != 1 || ips[0].Name != name {
				t.Errorf("pod %s/%s imagePullSecrets %+v, want %s", g.ID(), w, ips, name)
			}
		}
	}
	for _, g := range []envdeploy.Group{g1, g2} {
		if err := g.Terminate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if left := objects(t, cs, ns, kubernetes.LabelSandbox); len(left) > 0 {
		t.Errorf("left after teardown: %v", left)
	}
}

// TestSandboxPullSecret: a deploy_sandbox Pod gets the pull Secret too
// (its image is used as written: no tarball comes with it).
func TestSandboxPullSecret(t *testing.T) {
	testCluster(t) // skips before a registry starts when there is no cluster
	reg := startRegistry(t, "", "")
	p, ns, _ := imageCluster(t, reg, "PULL", map[string]string{"PULL": dockerConfigJSON("ghcr.io", "u", "p")})
	ctx := context.Background()
	sb, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: "ghcr.io/org/tool:1"})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := p.Clientset().CoreV1().Pods(ns).Get(ctx, sb.(*kubernetes.Sandbox).PodName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Containers[0].Image != "ghcr.io/org/tool:1" || len(pod.Spec.ImagePullSecrets) != 1 {
		t.Errorf("image %q, imagePullSecrets %+v", pod.Spec.Containers[0].Image, pod.Spec.ImagePullSecrets)
	}
	if err := sb.Terminate(ctx); err != nil {
		t.Fatal(err)
	}
	if left := objects(t, p.Clientset(), ns, kubernetes.LabelSandbox); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
	if reg.manifestPuts.Load() != 0 {
		t.Error("a sandbox image was pushed")
	}
}

// TestStoreImageDeployFailures: a registry that refuses the push or is
// down, and a pull secret missing from the secret store, fail the deploy
// naming the cause and leave nothing in the namespace.
func TestStoreImageDeployFailures(t *testing.T) {
	testCluster(t) // skips before a registry starts when there is no cluster
	refusing := startRegistry(t, "robot", "right")
	down := startRegistry(t, "", "")
	down.srv.Close()
	for _, tc := range []struct {
		name       string
		reg        *testRegistry
		pullSecret string
		want       error
		mentions   []string
	}{
		{"refused", refusing, "", kubernetes.ErrImagePush, []string{"registry " + refusing.host, "401"}},
		{"wrong-credentials", refusing, "PULL", kubernetes.ErrImagePush, []string{"registry " + refusing.host, "401"}},
		{"down", down, "", kubernetes.ErrImagePush, []string{"registry " + down.host}},
		{"pull-secret-missing", refusing, "NO_SUCH_SECRET", kubernetes.ErrPullSecret, []string{`"NO_SUCH_SECRET"`, "not in the secret store"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ns, images := imageCluster(t, tc.reg, tc.pullSecret, map[string]string{"PULL": dockerConfigJSON(tc.reg.host, "robot", "wrong")})
			ref, _ := images.Ref("items__env_image", 1)
			w := envdeploy.Workload{Name: "items", Role: "mcp_server", Port: envdeploy.MCPPort, Source: storeImage(t, ref, nil)}
			g, err := deployGroup(t, p, "inst-f", w)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if tc.want == kubernetes.ErrImagePush && !strings.Contains(err.Error(), ref) {
				t.Errorf("error %v does not name the image %s", err, ref)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %v does not mention %s", err, m)
				}
			}
			if strings.Contains(err.Error(), "cm9ib3Q6d3Jvbmc") || strings.Contains(err.Error(), ":wrong") {
				t.Errorf("error %v holds the secret", err)
			}
			if left := objects(t, p.Clientset(), ns, kubernetes.LabelSandbox); len(left) > 0 {
				t.Errorf("left after a failed deploy: %v", left)
			}
			if err := g.Terminate(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestPrunePullSecret: prune removes an orphaned group's pull Secret with
// its Pod, Service and environment Secret.
func TestPrunePullSecret(t *testing.T) {
	testCluster(t) // skips before a registry starts when there is no cluster
	reg := startRegistry(t, "", "")
	p, ns, images := imageCluster(t, reg, "PULL", map[string]string{"PULL": dockerConfigJSON(reg.host, "u", "p")})
	ref, _ := images.Ref("items__env_image", 1)
	ctx := context.Background()
	expires := time.Now().Add(time.Hour)
	g, err := p.CreateGroup(ctx, envdeploy.GroupSpec{Labels: envdeploy.OwnerLabels("inst-p", false, expires)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(ctx, envdeploy.Workload{Name: "items", Role: "mcp_server", Port: envdeploy.MCPPort, PortEnv: "MCP_PORT", Source: storeImage(t, ref, nil)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Clientset().CoreV1().Secrets(ns).Get(ctx, kubernetes.PullSecretName(g.ID()), metav1.GetOptions{}); err != nil {
		t.Fatalf("pull secret: %v", err)
	}
	rule := envdeploy.PruneRule{Now: expires.Add(time.Hour), StoreID: "store-a"}
	removed, err := p.Prune(ctx, func(l map[string]string) bool { o, _ := rule.Decide(l); return o })
	if err != nil || len(removed) != 1 || removed[0] != g.ID()+" (4 objects)" {
		t.Errorf("prune removed %v, %v; want %s (4 objects: pod, service, env and pull secrets)", removed, err, g.ID())
	}
	if left := objects(t, p.Clientset(), ns, kubernetes.LabelSandbox); len(left) > 0 {
		t.Errorf("left after prune: %v", left)
	}
}
