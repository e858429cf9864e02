package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
	"github.com/agentenv/agentenv/runner/sandboxtest"
)

// The shared suite: its VM-mode cases skip (Docker sandboxes are
// containers); the Capabilities claims are checked, and CopyOut runs in a
// container of the echo image with links planted through the archive API.
func TestSandboxConformance(t *testing.T) {
	p := engine(t)
	defer p.Close()
	ref := "localhost:5000/" + envdeploytest.ProcessPrefix + "-sandbox/copyout:v1"
	loadEchoImage(t, p, ref)
	sandboxtest.RunWith(t, func(t *testing.T) sandbox.Provider {
		p, err := docker.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, &sandboxtest.Options{
		ContainerSpec: &sandbox.Spec{Mode: sandbox.ModeContainer, Image: ref},
		Symlink:       plantLink,
	})
}

// plantLink writes a symlink into a container sandbox with the archive API
// (the images have no shell to run ln in).
func plantLink(t *testing.T, sb sandbox.Sandbox, target, link string) {
	t.Helper()
	plantTar(t, sb, &tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(link, "/"), Linkname: target, Mode: 0o777})
}

func plantTar(t *testing.T, sb sandbox.Sandbox, h *tar.Header) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := docker.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Client().CopyToContainer(context.Background(), sb.(*docker.Sandbox).ContainerID(),
		client.CopyToContainerOptions{DestinationPath: "/", Content: &buf}); err != nil {
		t.Fatalf("plant %s: %v", h.Name, err)
	}
}

// loadEchoImage puts the echo env into the engine as a FROM scratch image.
func loadEchoImage(t *testing.T, p *docker.Provider, ref string) {
	t.Helper()
	envdeploytest.LoadEchoImage(t, p, ref)
}

func TestContainerSandbox(t *testing.T) {
	p := engine(t)
	t.Cleanup(func() { p.Close() })
	ctx := context.Background()
	ref := "localhost:5000/" + envdeploytest.ProcessPrefix + "-sandbox/echo:v1"
	loadEchoImage(t, p, ref)

	if _, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeVM}); !errors.Is(err, sandbox.ErrNotSupported) {
		t.Errorf("VM mode: %v, want ErrNotSupported", err)
	}
	if _, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: "localhost:5000/" + envdeploytest.ProcessPrefix + "-none/x:v1", Port: 80}); !errors.Is(err, envdeploy.ErrImageMissing) {
		t.Errorf("missing image: %v, want ErrImageMissing", err)
	}
	sb, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: ref, Port: envdeploy.MCPPort,
		Env: map[string]string{"ENVIRONMENT_NAME": "boxed", "MCP_HOST": "0.0.0.0", "MCP_PORT": "18765"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Terminate(context.Background()) })
	if sb.Type() != "docker" || sb.Mode() != sandbox.ModeContainer || sb.Handle().ID != sb.ID() {
		t.Errorf("identity %s %s %+v", sb.Type(), sb.Mode(), sb.Handle())
	}
	u := sb.TunnelURLs()[envdeploy.MCPPort]
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("tunnels %v", sb.TunnelURLs())
	}
	waitCard(t, u)

	if err := sb.WriteFile(ctx, "/data/sub/a.txt", strings.NewReader("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := sb.ReadFile(ctx, "/data/sub/a.txt"); err != nil || string(b) != "hello" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	if err := sb.WriteFile(ctx, "rel.txt", strings.NewReader("r"), 0); err != nil {
		t.Fatal(err)
	}
	if b, err := sb.ReadFile(ctx, "/app/rel.txt"); err != nil || string(b) != "r" {
		t.Errorf("relative path = %q, %v", b, err)
	}
	if fi, err := sb.Stat(ctx, "/data/sub"); err != nil || !fi.IsDir() {
		t.Errorf("Stat dir: %v %v", fi, err)
	}
	if fi, err := sb.Stat(ctx, "/data/sub/a.txt"); err != nil || fi.Size() != 5 {
		t.Errorf("Stat file: %v %v", fi, err)
	}
	if _, err := sb.ReadFile(ctx, "/nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := sb.Stat(ctx, "/nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing stat: %v", err)
	}
	// The image has only its binary: run it with a bad port to see the
	// exit code and stderr come back.
	res, err := sb.Exec(ctx, []string{"/echo-env"}, &sandbox.ExecOptions{Env: map[string]string{"MCP_PORT": "notaport"}})
	if err != nil || res.ExitCode == 0 || !strings.Contains(string(res.Stdout)+string(res.Stderr), "notaport") {
		t.Errorf("exec: %d %q %q %v", res.ExitCode, res.Stdout, res.Stderr, err)
	}
	if res, err := sb.Exec(ctx, []string{"/no-such-program"}, nil); err == nil && res.ExitCode == 0 {
		t.Error("a missing program succeeded")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := sb.Exec(cctx, []string{"/echo-env"}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled exec: %v", err)
	}

	again, err := p.GetSandbox(ctx, sb.Handle())
	if err != nil {
		t.Fatal(err)
	}
	if b, err := again.ReadFile(ctx, "/data/sub/a.txt"); err != nil || string(b) != "hello" || again.TunnelURLs()[envdeploy.MCPPort] != u {
		t.Errorf("reconnected: %q %v %v", b, err, again.TunnelURLs())
	}
	if err := sb.Terminate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := again.Terminate(ctx); err != nil {
		t.Errorf("second terminate: %v", err)
	}
	if _, err := sb.Exec(ctx, []string{"/echo-env"}, nil); !errors.Is(err, sandbox.ErrTerminated) {
		t.Errorf("exec after terminate: %v", err)
	}
	if _, err := p.GetSandbox(ctx, sb.Handle()); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("GetSandbox after terminate: %v", err)
	}
	if left, _ := p.Labelled(ctx, envdeploy.LabelSandbox, sb.ID()); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

func waitCard(t *testing.T, base string) {
	t.Helper()
	envdeploytest.Poll(t, func() bool {
		resp, err := http.Get(base + "/.well-known/agent-env.json")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200 && strings.Contains(string(b), `"boxed"`)
	})
}

// An engine image under the registered tag that is not the registered
// image is replaced from the stored tarball. The image it replaces is
// removed only when it is this store's own (an older build, labelled with
// the store id): another store's image, or an unlabelled one, stays.
func TestStaleImageReplaced(t *testing.T) {
	p := engine(t)
	t.Cleanup(func() { removeTestImages(t, p); p.Close() })
	bins := envdeploytest.Build(t)
	ctx := context.Background()
	st := envdeploytest.NewStores(t)
	put := &envdeploy.Putter{Stores: st, TempDir: t.TempDir()}
	if _, err := put.PutGateway(ctx, "default", envdeploy.ImageInput{Binary: bins.Gateway}); err != nil {
		t.Fatal(err)
	}
	e, err := put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "echo", EnvironmentName: "echo", Image: envdeploy.ImageInput{Binary: bins.Echo}})
	if err != nil {
		t.Fatal(err)
	}
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"docker": p}, DefaultSandbox: "docker"}
	for _, c := range []struct {
		name, store string
		removed     bool
	}{
		{"this store's", st.Images.StoreID(), true},
		{"another store's", "0123456789abcdef", false},
		{"unlabelled", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The crasher under echo's tag; the nonce makes its id this
			// test's alone, so removing it by id touches nobody else's.
			labels := map[string]string{"agentenvtest.nonce": runner.RandomHex(8)}
			if c.store != "" {
				labels[registry.StoreLabel] = c.store
			}
			img, err := imagebuild.Scratch(imagebuild.Image{Binary: bins.Crasher, Labels: labels})
			if err != nil {
				t.Fatal(err)
			}
			staleID, _ := img.ConfigName()
			var buf bytes.Buffer
			if err := imagebuild.WriteTarball(&buf, e.ImageName, img); err != nil {
				t.Fatal(err)
			}
			if err := p.LoadImage(ctx, &buf); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.RemoveImage(context.Background(), staleID.String()) })
			inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "echo"}})
			if err != nil {
				t.Fatalf("deploy over a stale image: %v", err)
			}
			if err := d.Teardown(ctx, inst.InstanceID); err != nil {
				t.Fatal(err)
			}
			_, err = p.Client().ImageInspect(ctx, staleID.String())
			if c.removed && err == nil {
				t.Errorf("stale image %s of this store is still in the engine", staleID)
			}
			if !c.removed && err != nil {
				t.Errorf("%s image %s was removed: %v", c.name, staleID, err)
			}
		})
	}
}

// Two stores (two state roots) on one engine each register env "echo"
// version 1 under one repository prefix. Their tags differ, each deploys
// its own image, and deploying one never replaces or removes the other's.
func TestTwoStoresOneEngine(t *testing.T) {
	p := engine(t)
	// Its own prefix, not envdeploytest.ProcessPrefix: the package's
	// cleanups sweep that one while this test still needs its images.
	prefix := "agentenvstorestest-" + runner.RandomHex(4)
	t.Cleanup(func() {
		removeImagesUnder(t, p, "localhost:5000/"+prefix+"/")
		p.Close()
	})
	bins := envdeploytest.Build(t)
	ctx := context.Background()
	var refs, storeIDs [2]string
	var deployers [2]*envdeploy.Deployer
	for i, name := range []string{"echo", "echob"} {
		st := envdeploytest.NewStoresWithPrefix(t, prefix)
		put := &envdeploy.Putter{Stores: st, TempDir: t.TempDir()}
		if _, err := put.PutGateway(ctx, "default", envdeploy.ImageInput{Binary: bins.Gateway}); err != nil {
			t.Fatal(err)
		}
		// Another environment name makes another image in each store.
		e, err := put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "echo", EnvironmentName: name, Image: envdeploy.ImageInput{Binary: bins.Echo}})
		if err != nil {
			t.Fatal(err)
		}
		refs[i], storeIDs[i] = e.ImageName, st.Images.StoreID()
		deployers[i] = &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"docker": p}, DefaultSandbox: "docker"}
	}
	if refs[0] == refs[1] || storeIDs[0] == storeIDs[1] {
		t.Fatalf("two stores tag echo v1 alike: %s", refs[0])
	}
	for i, d := range deployers {
		inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "echo"}})
		if err != nil {
			t.Fatalf("store %d deploy: %v", i, err)
		}
		if err := d.Teardown(ctx, inst.InstanceID); err != nil {
			t.Fatal(err)
		}
	}
	for i, ref := range refs {
		ins, err := p.Client().ImageInspect(ctx, ref)
		if err != nil {
			t.Fatalf("store %d's image %s is gone: %v", i, ref, err)
		}
		if ins.Config == nil || ins.Config.Labels[registry.StoreLabel] != storeIDs[i] {
			t.Errorf("image %s is not labelled %s=%s", ref, registry.StoreLabel, storeIDs[i])
		}
	}
}

// The archive API's own link forms: a hard link entry carries no content
// (it names an earlier entry), and a copied folder that is itself a link is
// copied from where it leads inside the container.
func TestCopyOutArchiveLinks(t *testing.T) {
	p := engine(t)
	t.Cleanup(func() { p.Close() })
	ctx := context.Background()
	ref := "localhost:5000/" + envdeploytest.ProcessPrefix + "-sandbox/copyout-links:v1"
	loadEchoImage(t, p, ref)
	sb, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: ref})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Terminate(context.Background()) })
	if err := sb.WriteFile(ctx, "/data/real/a.txt", strings.NewReader("A"), 0o640); err != nil {
		t.Fatal(err)
	}
	plantTar(t, sb, &tar.Header{Typeflag: tar.TypeLink, Name: "data/real/hard", Linkname: "data/real/a.txt", Mode: 0o640})
	plantLink(t, sb, "/app/out/a.txt", "/data/real/via-root-link")
	if err := sb.WriteFile(ctx, "/app/keep", strings.NewReader("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	plantLink(t, sb, "/data/real", "/app/out")
	// The absolute link names the copied folder by its link, so it is
	// inside only when the folder is copied under that name.
	for root, want := range map[string]map[string]string{
		"/data/real": {"a.txt": "A", "hard": "A"},
		"/app/out":   {"a.txt": "A", "hard": "A", "via-root-link": "A"},
	} {
		got := map[string]string{}
		err := sb.CopyOut(ctx, root, &sandbox.CopyOutOptions{Skip: func(rel string) bool {
			_, ok := want[rel]
			return !ok
		}}, func(f sandbox.File) error {
			got[f.Path] = string(f.Data)
			if f.Path == "a.txt" && f.Mode != 0o640 {
				t.Errorf("%s: mode %v, want 0640", f.Path, f.Mode)
			}
			return nil
		})
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("CopyOut(%s) = %v, %v; want %v", root, got, err, want)
		}
	}
	err = sb.CopyOut(ctx, "/data/real", nil, func(sandbox.File) error { return nil })
	if !errors.Is(err, sandbox.ErrLinkOutside) {
		t.Errorf("CopyOut(/data/real) with a link through /app/out: %v, want ErrLinkOutside", err)
	}
}
