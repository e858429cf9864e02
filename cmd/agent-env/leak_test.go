package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
)

// mustRun runs each command and fails the test at the first that does not
// exit 0.
func (c *cli) mustRun(cmds ...[]string) {
	c.t.Helper()
	for _, args := range cmds {
		if code, out, errb := c.run(args...); code != 0 {
			c.t.Fatalf("%v: %s %s", args, out, errb)
		}
	}
}

// putStuckEcho registers the echo env and a "gateway" (the echo binary)
// that never lists its children: a deploy with --gateway stuck waits for
// readiness until it is interrupted.
func putStuckEcho(t *testing.T, c *cli, bins envdeploytest.Binaries) {
	t.Helper()
	c.mustRun(
		[]string{"env", "gateway", "put", "--id", "stuck", "--binary", bins.Echo},
		[]string{"env", "mcp-server", "put", "--id", "echo", "--binary", bins.Echo, "--environment-name", "echo"},
	)
}

// TestEnvDeploySIGINTLeavesNothing: Ctrl-C lands on a real `env deploy`
// process at several points of a Docker deploy (before the network, with
// the network or a container create in flight, while waiting for
// readiness); every time the process exits 130 and nothing labelled with
// its pid is left on the engine.
func TestEnvDeploySIGINTLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	p := dockerOrSkip(t)
	bin := buildCLI(t)
	bins := envdeploytest.Build(t)
	c := newCLI(t)
	putStuckEcho(t, c, bins)
	t.Cleanup(func() {
		// Tagged per store (imageRef): an untagged v1 would miss them.
		for _, repo := range []string{"stuck__env_image", "echo__env_image"} {
			if err := p.RemoveImage(context.Background(), c.imageRef(repo)); err != nil {
				t.Errorf("remove the test's image: %v", err)
			}
		}
	})
	ctx := context.Background()
	// exists polls the engine until something of owner matching f exists.
	exists := func(owner string, what string, f func() (bool, error)) bool {
		deadline := time.NewTimer(60 * time.Second)
		defer deadline.Stop()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			ok, err := f()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if ok {
				return true
			}
			select {
			case <-deadline.C:
				t.Errorf("%s of %s never appeared", what, owner)
				return false
			case <-tick.C:
			}
		}
	}
	anyNetwork := func(owner string) func() (bool, error) {
		return func() (bool, error) {
			l, err := p.Client().NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("label", envdeploy.LabelOwner+"="+owner)})
			return err == nil && len(l.Items) > 0, err
		}
	}
	containers := func(owner string, n int, extra ...string) func() (bool, error) {
		return func() (bool, error) {
			f := make(client.Filters).Add("label", envdeploy.LabelOwner+"="+owner)
			for _, e := range extra {
				f = f.Add("label", e)
			}
			l, err := p.Client().ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
			return err == nil && len(l.Items) >= n, err
		}
	}
	type point struct {
		name string
		wait func(owner string)
	}
	after := func(d time.Duration) func(string) {
		return func(string) {
			tm := time.NewTimer(d)
			defer tm.Stop()
			<-tm.C
		}
	}
	points := []point{
		{"at once", func(string) {}},
		{"after 5ms", after(5 * time.Millisecond)},
		{"after 20ms", after(20 * time.Millisecond)},
		{"after 50ms", after(50 * time.Millisecond)},
		{"after 150ms", after(150 * time.Millisecond)},
		{"network exists", func(o string) { exists(o, "network", anyNetwork(o)) }},
		{"first container exists", func(o string) { exists(o, "container", containers(o, 1)) }},
		{"gateway exists", func(o string) { exists(o, "gateway", containers(o, 1, envdeploy.LabelRole+"=gateway")) }},
		{"waiting for readiness", func(o string) {
			exists(o, "running gateway", func() (bool, error) {
				f := make(client.Filters).Add("label", envdeploy.LabelOwner+"="+o).Add("label", envdeploy.LabelRole+"=gateway").Add("status", "running")
				l, err := p.Client().ContainerList(ctx, client.ContainerListOptions{Filters: f})
				return err == nil && len(l.Items) > 0, err
			})
		}},
	}
	for _, pt := range points {
		t.Run(strings.ReplaceAll(pt.name, " ", "_"), func(t *testing.T) {
			ch := startCLI(t, bin, "env", "deploy", "--id", "echo", "--sandbox", "docker", "--gateway", "stuck")
			owner := "pid:" + strconv.Itoa(ch.cmd.Process.Pid)
			t.Cleanup(func() {
				_, _ = p.Prune(context.Background(), func(l map[string]string) bool { return l[envdeploy.LabelOwner] == owner })
			})
			ch.waitLine("Deploying (")
			pt.wait(owner)
			if err := ch.cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			if code := ch.exitCode(); code != exitInterrupted {
				t.Errorf("exit %d, want 130:\n%s", code, ch.output())
			}
			if left, err := p.Labelled(ctx, envdeploy.LabelOwner, owner); err != nil || len(left) != 0 {
				t.Errorf("left behind after Ctrl-C: %v %v\n%s", left, err, ch.output())
			}
		})
	}
}

// TestTaskRunKilledIsAbandoned: a task run killed with SIGKILL stays
// "running" in its record until the next command opens the store, which
// marks it abandoned; `sandbox prune` then removes its recorded work
// folder and its env's process group.
func TestTaskRunKilledIsAbandoned(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildCLI(t)
	bins := envdeploytest.Build(t)
	c := newCLI(t)
	if code, out, errb := c.run("env", "mcp-server", "put", "--id", "echo", "--binary", bins.Echo, "--environment-name", "echo"); code != 0 {
		t.Fatalf("put: %s %s", out, errb)
	}
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "killed.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"env","type":"deploy_env","env_id":"echo","ttl_seconds":600}]`)
	// The default gateway is the stuck one too: the run waits for a
	// readiness that never comes.
	if code, out, stderr := c.run("env", "gateway", "put", "--binary", bins.Echo); code != 0 {
		t.Fatalf("gateway put: %s %s", out, stderr)
	}
	if code, out, stderr := c.run("task", "create", f, "--id", "killed"); code != 0 {
		t.Fatalf("create: %s %s", out, stderr)
	}
	ch := startCLI(t, bin, "task", "run", "--id", "killed", "--env-sandbox", "process", "--output-dir", filepath.Join(dir, "o"))
	ch.waitLine("Running step [2/2]: deploy_env (id=env)...")
	// Kill once the env's gateway process runs: the run is then waiting
	// for a readiness that never comes.
	gatewayRuns := func() bool {
		m, _ := filepath.Glob(filepath.Join(c.sandboxDir, "process", "agentenv-*", "group.json"))
		for _, f := range m {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), `"name": "gateway"`) {
				return true
			}
		}
		return false
	}
	deadline := time.NewTimer(120 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !gatewayRuns() {
		select {
		case <-deadline.C:
			t.Fatalf("the env's gateway never ran:\n%s", ch.output())
		case <-tick.C:
		}
	}
	if err := ch.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = ch.exitCode()
	id := regexp.MustCompile(`Task instance: (killed-[a-z0-9]{8})`).FindStringSubmatch(ch.output())
	if id == nil {
		t.Fatalf("no instance line:\n%s", ch.output())
	}
	if inst := c.instance(id[1]); inst.Status != runner.StatusRunning {
		t.Fatalf("before any command: %s, want running", inst.Status)
	}
	if code, out, errb := c.run("task", "list"); code != 0 {
		t.Fatalf("task list: %s %s", out, errb)
	}
	inst := c.instance(id[1])
	if inst.Status != runner.StatusAbandoned || inst.Error == nil || !strings.Contains(*inst.Error, "pid "+strconv.Itoa(ch.cmd.Process.Pid)) {
		t.Errorf("after the next command: %s %v, want abandoned naming the pid", inst.Status, inst.Error)
	}
	if len(c.leftoverSandboxes()) == 0 {
		t.Fatal("the killed run left no work folder: the test proves nothing")
	}
	code, out, errb := c.run("sandbox", "prune")
	if code != 0 || !regexp.MustCompile(`Removed sandbox local-\S+ \(local, folder \S+\) of abandoned run `+regexp.QuoteMeta(id[1])).MatchString(out) ||
		!strings.Contains(out, "Removed process group process-") {
		t.Errorf("prune: %d\n%s\n%s", code, out, errb)
	}
	var left []string
	for _, e := range c.leftoverSandboxes() {
		if e != "process" {
			left = append(left, e)
		}
	}
	groups, _ := filepath.Glob(filepath.Join(c.sandboxDir, "process", "agentenv-*"))
	if len(left)+len(groups) != 0 {
		t.Errorf("left after prune: %v %v", left, groups)
	}
}

// TestPruneKeepsOtherStores: two stores (two state folders) deploy on one
// engine; a persisted deploy of store B whose CLI has exited is live (its
// record says deployed), and a dead run's group of store B is an orphan.
// Prune in store A removes neither and says why; prune in B removes only
// its orphan; --all-stores from A is needed to reach B's orphans.
func TestPruneKeepsOtherStores(t *testing.T) {
	p := dockerOrSkip(t)
	bins := envdeploytest.Build(t)
	a := newCLI(t)
	aRoot := a.stateRoot
	b := newCLI(t) // the environment now points at store B
	b.mustRun(
		[]string{"env", "gateway", "put", "--binary", bins.Gateway},
		[]string{"env", "mcp-server", "put", "--id", "echo", "--binary", bins.Echo, "--environment-name", "echo"},
	)
	t.Cleanup(func() {
		for _, repo := range []string{"echo__env_image", "default__env_image"} {
			if err := p.RemoveImage(context.Background(), b.imageRef(repo)); err != nil {
				t.Errorf("remove the test's image: %v", err)
			}
		}
	})
	// Deployed by a child process that then exits: only its record keeps
	// it alive.
	args, _ := json.Marshal([]string{"env", "deploy", "--id", "echo", "--sandbox", "docker", "--ttl-seconds", "600"})
	deploy := exec.Command(os.Args[0], "-test.run=^TestHelperCLI$")
	deploy.Env = append(os.Environ(), "AGENTENV_HELPER_ARGS="+string(args))
	dout, err := deploy.CombinedOutput()
	m := instanceIDRe.FindStringSubmatch(string(dout))
	if err != nil || m == nil {
		t.Fatalf("deploy in B: %v\n%s", err, dout)
	}
	live := m[1]
	t.Cleanup(func() { b.run("env", "teardown", "--instance-id", live) })
	// A dead owner's group labelled with B's store id: B's orphan.
	idB, err := registry.StoreID(filepath.Join(b.stateRoot, "agent-env"))
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := p.CreateGroup(context.Background(), envdeploy.GroupSpec{Labels: map[string]string{
		envdeploy.LabelInstance: "orphan-of-b", envdeploy.LabelOwner: "pid:999999999", envdeploy.LabelPersist: "false", envdeploy.LabelStore: idB}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = orphan.Terminate(context.Background()) })
	deployed := "docker-" + live[len(live)-8:]

	// Store A.
	t.Setenv("XDG_STATE_HOME", aRoot)
	code, out, errb := a.run("sandbox", "prune")
	if code != 0 || strings.Contains(out, "Removed") {
		t.Errorf("prune in A removed B's resources: %d\n%s\n%s", code, out, errb)
	}
	for _, want := range []string{"Kept " + deployed + " (instance " + live + "): belongs to another store (" + idB + ")",
		"Kept " + orphan.ID() + " (instance orphan-of-b): belongs to another store (" + idB + ")"} {
		if !strings.Contains(out, want) {
			t.Errorf("prune in A does not say %q:\n%s", want, out)
		}
	}
	if got, _ := p.Labelled(context.Background(), envdeploy.LabelSandbox, deployed); len(got) == 0 {
		t.Fatal("B's live deploy is gone after prune in A")
	}

	// Store B: its orphan goes, its live deploy stays (recorded deployed).
	t.Setenv("XDG_STATE_HOME", b.stateRoot)
	code, out, errb = b.run("sandbox", "prune")
	if code != 0 || !strings.Contains(out, "Removed network "+docker.NetworkName(orphan.ID())) ||
		!strings.Contains(out, "Kept "+deployed+" (instance "+live+"): instance "+live+" is recorded as deployed") {
		t.Errorf("prune in B: %d\n%s\n%s", code, out, errb)
	}
	if got, _ := p.Labelled(context.Background(), envdeploy.LabelSandbox, deployed); len(got) == 0 {
		t.Fatal("B's live deploy is gone after prune in B")
	}
	code, out, _ = b.run("env", "get-instance", "--id", live)
	if code != 0 || !strings.Contains(out, `"status": "deployed"`) {
		t.Errorf("B's instance: %s", out)
	}
}

// TestRunKeepListsEnvs: `run --keep` lists the envs it keeps (not only
// deploy_sandbox sandboxes), each with where it lives and the command that
// tears it down; that command works while the run waits.
func TestRunKeepListsEnvs(t *testing.T) {
	bins := envdeploytest.Build(t)
	c := newCLI(t)
	c.mustRun(
		[]string{"env", "gateway", "put", "--binary", bins.Gateway},
		[]string{"env", "mcp-server", "put", "--id", "echo", "--binary", bins.Echo, "--environment-name", "echo"},
	)
	dir := filepath.Join(t.TempDir(), "kept")
	writeFile(t, filepath.Join(dir, "tasks", "kept.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"env","type":"deploy_env","env_id":"echo","ttl_seconds":600,"sandbox_type":"process"}]`)
	out, errb := newSyncBuffer(), newSyncBuffer()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"run", dir, "--keep"}, c.deps(out, errb))
	}()
	out.waitFor(t, "Press Ctrl-C to tear down.\n")
	s := out.String()
	kept := regexp.MustCompile(`(?m)^  env echo: instance (\S+-[a-z0-9]{8}) on process, folder (\S+)\n    teardown: agent-env env teardown (\S+-[a-z0-9]{8})\n`).FindStringSubmatch(s)
	if kept == nil || kept[1] != kept[3] || !strings.HasPrefix(kept[2], filepath.Join(c.sandboxDir, "process", "agentenv-process-")) {
		t.Fatalf("kept env not listed:\n%s\n%s", s, errb)
	}
	if !regexp.MustCompile(`(?m)^  sandbox box: local-\S+ \(local\), folder \S+\n    teardown: rm -rf \S+\n`).MatchString(s) {
		t.Errorf("kept sandbox not listed:\n%s", s)
	}
	if _, err := os.Stat(kept[2]); err != nil {
		t.Errorf("the listed folder: %v", err)
	}
	if code, tout, terr := c.run("env", "teardown", "--instance-id", kept[1]); code != 0 {
		t.Errorf("the listed teardown command: %d %s %s", code, tout, terr)
	}
	if _, err := os.Stat(kept[2]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the env's folder after its teardown command: %v", err)
	}
	cancel(interruptFor(os.Interrupt))
	if code := <-done; code != 0 {
		t.Errorf("exit %d after a kept, passed run\n%s", code, errb)
	}
	if left := c.leftoverSandboxes(); len(left) > 1 || len(left) == 1 && left[0] != "process" {
		t.Errorf("leftover work folders: %v", left)
	}
}
