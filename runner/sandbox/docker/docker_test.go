package docker_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	envsteptest.Cleanup() // the bundle tests' shared fixture: its folder and images
	envdeploytest.Cleanup()
	os.Exit(code)
}

// engine returns a provider on the local engine. Without one the test is
// skipped, except under CI=true where it fails.
func engine(t testing.TB) *docker.Provider {
	t.Helper()
	p, err := docker.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Check(ctx); err != nil {
		p.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no Docker engine: %v", err)
		}
		t.Skipf("no Docker engine: %v", err)
	}
	return p
}

func mine(t *testing.T, p *docker.Provider) []string {
	left, err := p.Labelled(context.Background(), envdeploy.LabelOwner, "pid:"+strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	return left
}

func TestConformance(t *testing.T) {
	p := engine(t)
	t.Cleanup(func() {
		// Nothing of this process may survive the test.
		_, _ = p.Prune(context.Background(), func(l map[string]string) bool {
			return l[envdeploy.LabelOwner] == "pid:"+strconv.Itoa(os.Getpid())
		})
		removeTestImages(t, p)
		p.Close()
	})
	var images []string
	envdeploytest.Run(t, func(t *testing.T) envdeploy.Backend { return p }, &envdeploytest.Options{
		Leftovers: func(t *testing.T) []string { return mine(t, p) },
		RemoveImage: func(t *testing.T, ref string) {
			images = append(images, ref)
			if err := p.RemoveImage(context.Background(), ref); err != nil {
				t.Fatal(err)
			}
		},
	})
	_ = images
}

// removeTestImages removes every image this test process tagged (under
// envdeploytest.ProcessPrefix); other processes' images stay.
func removeTestImages(t *testing.T, p *docker.Provider) { removeTestImagesB(t, p) }

func removeTestImagesB(t testing.TB, p *docker.Provider) {
	removeImagesUnder(t, p, "localhost:5000/"+envdeploytest.ProcessPrefix)
}

// removeImagesUnder removes every image with a tag starting with prefix.
func removeImagesUnder(t testing.TB, p *docker.Provider, prefix string) {
	ctx := context.Background()
	list, err := p.Client().ImageList(ctx, client.ImageListOptions{})
	if err != nil {
		t.Errorf("list images: %v", err)
		return
	}
	for _, im := range list.Items {
		for _, tag := range im.RepoTags {
			if strings.HasPrefix(tag, prefix) {
				if err := p.RemoveImage(ctx, tag); err != nil {
					t.Errorf("remove %s: %v", tag, err)
				}
			}
		}
	}
}

func TestRewriteLoopback(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4000/v1":  "http://host.docker.internal:4000/v1",
		"http://localhost/v1":       "http://host.docker.internal/v1",
		"http://[::1]:9/x":          "http://host.docker.internal:9/x",
		"http://0.0.0.0:9":          "http://host.docker.internal:9",
		"https://api.example.com/x": "https://api.example.com/x",
		"http://10.0.0.2:80":        "http://10.0.0.2:80",
	} {
		if got := docker.RewriteLoopback(in); got != want {
			t.Errorf("RewriteLoopback(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEngineGone(t *testing.T) {
	p, err := docker.New(&docker.Options{Host: "tcp://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = p.Check(ctx)
	if err == nil || !errorsIs(err, envdeploy.ErrEngineUnavailable) {
		t.Fatalf("Check against a closed port: %v", err)
	}
}
