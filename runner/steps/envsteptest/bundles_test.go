package envsteptest_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/internal/chromium/chromiumtest"
	"github.com/agentenv/agentenv/internal/pgserver/pgservertest"
	"github.com/agentenv/agentenv/runner/bundle"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// checkBundle runs an installed bundle and checks the CI gate: passed,
// every verification 1, every prompt's trajectory readable.
func checkBundle(t *testing.T, f *envsteptest.Fixture, name string) *bundle.Report {
	t.Helper()
	rep, _ := checkBundleOut(t, f, name)
	return rep
}

func checkBundleOut(t *testing.T, f *envsteptest.Fixture, name string) (*bundle.Report, string) {
	t.Helper()
	rep, out := f.PassBundle(t, name, f.Services.Deployer.DefaultSandbox)
	for _, rc := range rep.Contexts() {
		snap := rc.Snapshot()
		prs, _ := snap["prompt_responses"].([]any)
		for _, p := range prs {
			pr := p.(map[string]any)
			u, _ := pr["agent_trajectory_object_url"].(string)
			key, err := f.Services.Objects.KeyOf(u)
			if err != nil {
				t.Errorf("%s: prompt %v: trajectory url %q: %v", name, pr["prompt_id"], u, err)
				continue
			}
			r, _, err := f.Services.Objects.Open(context.Background(), key)
			if err != nil {
				t.Errorf("%s: trajectory %s: %v", name, key, err)
				continue
			}
			b, _ := io.ReadAll(r)
			r.Close()
			if !json.Valid(b) {
				t.Errorf("%s: trajectory %s is not JSON", name, key)
			}
		}
	}
	return rep, out
}

func TestBundleQ3Email(t *testing.T) {
	f := envsteptest.New(t)
	rep := checkBundle(t, f, "q3-email")
	if rep.TornDown != 2 {
		t.Errorf("tore down %d, want the env and the agent", rep.TornDown)
	}
	if !strings.Contains(rep.Runs[0].SummaryLine(), "passed (outcome: 1, reply: 1)") {
		t.Errorf("summary %q", rep.Runs[0].SummaryLine())
	}
}

// TestBundleQ3EmailDocker runs q3-email on the Docker sandbox (images
// FROM scratch, one network per env, the agent joined to it).
func TestBundleQ3EmailDocker(t *testing.T) {
	f := envsteptest.NewOn(t, "docker")
	rep := checkBundle(t, f, "q3-email")
	if rep.TornDown != 2 {
		t.Errorf("tore down %d, want the env and the agent", rep.TornDown)
	}
}

func TestBundleDeadlineWeek(t *testing.T) {
	f := envsteptest.New(t)
	rep := checkBundle(t, f, "deadline-week")
	rc := rep.Contexts()[0]
	syncs, _ := rc.Metadata("env_clock_syncs")
	// One arm at Monday 09:00: the week then runs at 3,600x until the
	// Friday 17:00 trigger fires (about 104 s of real time).
	if m, _ := syncs.(map[string]any); len(m) != 1 {
		t.Errorf("env_clock_syncs %v", syncs)
	}
}

func TestBundleHandoff(t *testing.T) {
	f := envsteptest.New(t)
	rep := checkBundle(t, f, "handoff")
	rc := rep.Contexts()[0]
	peerings, _ := rc.Metadata("agent_peerings")
	if l, _ := peerings.([]any); len(l) != 1 {
		t.Errorf("agent_peerings %v", peerings)
	}
	if rep.TornDown != 4 {
		t.Errorf("tore down %d, want 2 envs and 2 agents", rep.TornDown)
	}
}

func TestBundleOffice(t *testing.T) {
	if testing.Short() {
		t.Skip("office deploys 25 workloads")
	}
	f := envsteptest.New(t)
	rep, out := checkBundleOut(t, f, "office")
	rc := rep.Contexts()[0]
	if v := rc.Verifications(); len(v) != 20 {
		t.Errorf("%d verifications, want 20", len(v))
	}
	pr, err := rc.PromptResponseEntry("c7")
	if err != nil || pr["conversation_turns"] != float64(2) || pr["response"] != "You're welcome, goodbye!" {
		t.Errorf("conversation c7: %v %v", pr, err)
	}
	if urls, _ := pr["target_agent_per_turn_trajectory_object_urls"].([]any); len(urls) != 2 {
		t.Errorf("per-turn trajectories %v", pr["target_agent_per_turn_trajectory_object_urls"])
	}
	t.Logf("office ran in %.1fs", rep.Runs[0].Seconds)
	if testing.Verbose() {
		t.Log(out)
	}
}

// The browser office: a scripted computer-use agent replies through the
// webmail with the gateway's browser tools; the outcome verifier checks
// the sent mail; the screenshots are in the object store.
func TestBundleBrowserOffice(t *testing.T) {
	chromiumtest.Need(t)
	f := envsteptest.New(t)
	if f.Services.Deployer.DefaultSandbox != "process" {
		t.Skip("on Docker the browser office is TestBundleBrowserOfficeDocker (runner/sandbox/docker), which builds its host-closure browser image")
	}
	rep := checkBundle(t, f, "browser-office")
	if rep.TornDown != 2 {
		t.Errorf("tore down %d, want the env and the agent", rep.TornDown)
	}
	shots, err := f.Services.Objects.List(context.Background(), "screenshots/")
	if err != nil || len(shots) != 2 {
		t.Fatalf("stored screenshots: %v %v", shots, err)
	}
}

// TestBundleShopDB runs the service_db example: a SQL dump loaded
// through load_artifact, an agent writing through db_execute as its role,
// and tool checks over the database.
func TestBundleShopDB(t *testing.T) {
	pgservertest.Need(t)
	f := envsteptest.New(t)
	rep := checkBundle(t, f, "shop-db")
	if rep.TornDown != 2 {
		t.Errorf("tore down %d, want the env and the agent", rep.TornDown)
	}
}
