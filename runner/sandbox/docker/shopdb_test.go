package docker_test

import (
	"strings"
	"testing"

	"github.com/agentenv/agentenv/internal/pgserver/pgservertest"
	"github.com/agentenv/agentenv/runner/bundle"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// TestBundleShopDBDocker runs the shop-db example bundle on Docker: the
// example service_db env is registered with a database image holding the
// host's PostgreSQL, the dump loads through load_artifact, the scripted
// agent writes through db_execute, and the tool checks pass.
func TestBundleShopDBDocker(t *testing.T) {
	pgservertest.Need(t)
	p := engine(t)
	t.Cleanup(func() { p.Close() })
	rep, _ := passBundleOnDocker(t, p, "shop-db")
	if rep.TornDown != 2 {
		t.Errorf("tore down %d, want the env and the agent", rep.TornDown)
	}
}

// passBundleOnDocker runs an example bundle on Docker with a fresh
// fixture and holds it to the examples' CI gate (envsteptest's
// PassBundle). The fixture's images, under its own repository prefix,
// are removed with the test.
func passBundleOnDocker(t *testing.T, p *docker.Provider, name string) (*bundle.Report, *envsteptest.Fixture) {
	t.Helper()
	f := envsteptest.NewOn(t, "docker")
	ref, err := f.Putter.Stores.Images.Ref("x", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeImagesUnder(t, p, strings.TrimSuffix(ref, "x:v1")) })
	rep, _ := f.PassBundle(t, name, "docker")
	return rep, f
}
