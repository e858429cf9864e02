package docker_test

import (
	"strings"
	"testing"

	"github.com/agentenv/agentenv/internal/pgserver/pgservertest"
	"github.com/agentenv/agentenv/runner/bundle"
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
	f := envsteptest.NewOn(t, "docker")
	// The fixture's images (its own repository prefix) go with the test.
	ref, err := f.Putter.Stores.Images.Ref("x", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeImagesUnder(t, p, strings.TrimSuffix(ref, "x:v1")) })
	rep, out := f.RunBundle(t, "shop-db", "docker")
	if rep.Failed() {
		t.Fatalf("shop-db failed:\n%s", out)
	}
	for _, r := range rep.Runs {
		if r.Outcome != bundle.Passed {
			t.Errorf("%s: outcome %q\n%s", r.Task.File, r.Outcome, out)
		}
	}
	for _, rc := range rep.Contexts() {
		for id, v := range rc.Verifications() {
			if v.Score != 1 {
				t.Errorf("verification %s: score %v\n%s", id, v.Score, out)
			}
		}
	}
	if rep.TornDown != 2 {
		t.Errorf("tore down %d, want the env and the agent", rep.TornDown)
	}
}
