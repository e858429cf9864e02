package main

import (
	"context"
	"encoding/json"
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
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
)

// TestHelperCLI is not a test: the leak test re-executes the test binary
// with AGENTENV_HELPER_ARGS to run the CLI in a child process it can
// SIGKILL.
func TestHelperCLI(t *testing.T) {
	raw := os.Getenv("AGENTENV_HELPER_ARGS")
	if raw == "" {
		t.Skip("helper process only")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		os.Exit(3)
	}
	os.Exit(execute(context.Background(), args, defaultDeps()))
}

// dockerOrSkip returns a provider on the local engine; without one the
// test is skipped, or fails under CI=true.
func dockerOrSkip(t *testing.T) *docker.Provider {
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
	t.Cleanup(func() { p.Close() })
	return p
}

var instanceIDRe = regexp.MustCompile(`Instance ID: (\S+-[a-z0-9]{8})`)

func TestEnvCLIProcess(t *testing.T) {
	bins := envdeploytest.Build(t)
	c := newCLI(t)
	if code, out, errb := c.run("env", "gateway", "put", "--binary", bins.Gateway); code != 0 {
		t.Fatalf("gateway put: %s %s", out, errb)
	}
	code, out, errb := c.run("env", "mcp-server", "put", "--id", "echo", "--binary", bins.Echo, "--environment-name", "echo")
	if code != 0 || !strings.Contains(out, "Created MCPServerEnv: id=echo version=1 environment_name=echo env_provider_type=gateway") {
		t.Fatalf("put: %d %s %s", code, out, errb)
	}
	code, out, errb = c.run("env", "deploy", "--id", "echo", "--sandbox", "process", "--ttl-seconds", "600")
	m := instanceIDRe.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("deploy: %d %s %s", code, out, errb)
	}
	for _, want := range []string{"Sandbox backend: process\n", "Fetching env: id=echo version=latest...\n", "Found env: id=echo version=1 type=mcp_server\n",
		"Deployed!\n", "Env MCP Url: http://127.0.0.1:", "Env Gateway Url: http://127.0.0.1:", "Expires At (UTC): "} {
		if !strings.Contains(out, want) {
			t.Errorf("deploy output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := c.run("env", "get-instance", "--id", m[1]); code != 0 || !strings.Contains(out, `"status": "deployed"`) {
		t.Errorf("get-instance: %d %s", code, out)
	}
	for range 2 {
		if code, out, errb := c.run("env", "teardown", "--instance-id", m[1]); code != 0 || out != "Tore down "+m[1]+".\n" {
			t.Errorf("teardown: %d %q %s", code, out, errb)
		}
	}
	if code, _, errb := c.run("env", "teardown", "--instance-id", "0123"); code != 1 || !strings.Contains(errb, "Error: Env instance 0123 not found") {
		t.Errorf("unknown instance: %d %s", code, errb)
	}
	if left, _ := os.ReadDir(filepath.Join(c.sandboxDir, "process")); len(left) != 0 {
		t.Errorf("process groups left: %v", left)
	}
}

// An env registered with the server topology deploys alone: the CLI prints
// its card URL and no gateway, refuses what only a gateway honours, and a
// multi env with that topology is never stored.
func TestEnvCLIServerTopology(t *testing.T) {
	bins := envdeploytest.Build(t)
	c := newCLI(t)
	code, out, errb := c.run("env", "mcp-server", "put", "--id", "solo", "--binary", bins.Echo, "--environment-name", "solo", "--env-provider-type", "server")
	if code != 0 || !strings.Contains(out, "env_provider_type=server") {
		t.Fatalf("put: %d %s %s", code, out, errb)
	}
	if code, _, errb := c.run("env", "multi", "put", "--id", "m", "--mcp-server", "solo", "--env-provider-type", "server"); code != 1 ||
		!strings.Contains(errb, "env_provider_type") {
		t.Errorf("server-topology multi env: %d %s", code, errb)
	}
	if code, _, errb := c.run("env", "deploy", "--id", "solo", "--sandbox", "process", "--gateway-mode", "consistent"); code != 1 ||
		!strings.Contains(errb, `invalid gateway_mode "consistent"`) || !strings.Contains(errb, "server topology") {
		t.Errorf("consistent mode: %d %s", code, errb)
	}
	code, out, errb = c.run("env", "deploy", "--id", "solo", "--sandbox", "process", "--ttl-seconds", "600")
	m := instanceIDRe.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("deploy: %d %s %s", code, out, errb)
	}
	for _, want := range []string{"Deployed!\n", "Env MCP Url: http://127.0.0.1:", "/mcp\n", "Env Card Url: http://127.0.0.1:",
		"/.well-known/agent-env.json\n", "Env Gateway Url: none (env_provider_type server)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("deploy output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := c.run("env", "get-instance", "--id", m[1]); code != 0 || !strings.Contains(out, `"env_provider_type": "server"`) {
		t.Errorf("get-instance: %d %s", code, out)
	}
	if code, out, errb := c.run("env", "teardown", "--instance-id", m[1]); code != 0 || out != "Tore down "+m[1]+".\n" {
		t.Errorf("teardown: %d %q %s", code, out, errb)
	}
	if left, _ := os.ReadDir(filepath.Join(c.sandboxDir, "process")); len(left) != 0 {
		t.Errorf("process groups left: %v", left)
	}
}

func TestEnvCLIBadInput(t *testing.T) {
	c := newCLI(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"env", "mcp-server", "put", "--id", "x", "--dockerfile", "/nonexistent/Dockerfile"}, "--dockerfile /nonexistent/Dockerfile"},
		{[]string{"env", "mcp-server", "put", "--id", "x"}, "give exactly one of --go-package"},
		{[]string{"env", "mcp-server", "put", "--id", "x", "--binary", "/bin/true", "--environment-name", "Bad_Name"}, "environment_name"},
		{[]string{"env", "deploy", "--id", "nope", "--sandbox", "process"}, "Env nope version=latest not found"},
		{[]string{"env", "deploy", "--id", "nope", "--ttl-seconds", "5"}, "ttl_seconds"},
		{[]string{"env", "multi", "put", "--id", "m", "--mcp-server", "ghost"}, "--mcp-server ghost"},
		{[]string{"a2a-agent", "deploy", "--id", "nope"}, "not found"},
	}
	for _, tc := range cases {
		code, out, errb := c.run(tc.args...)
		if code != 1 || !strings.Contains(errb, tc.want) || strings.Count(strings.TrimSpace(errb), "\n") > 0 && !strings.Contains(errb, "build log") {
			t.Errorf("%v: exit %d, stderr %q (want %q), stdout %q", tc.args, code, errb, tc.want, out)
		}
	}
}

func TestEnvCLIDockerBuildFailure(t *testing.T) {
	dockerOrSkip(t)
	c := newCLI(t)
	dir := t.TempDir()
	df := filepath.Join(dir, "Dockerfile")
	if err := os.WriteFile(df, []byte("FROM scratch\nENV ENVIRONMENT_NAME=broken\nCOPY missing-file /x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errb := c.run("env", "mcp-server", "put", "--id", "broken", "--dockerfile", df)
	if code != 1 || !strings.Contains(errb, "image build of") || !strings.Contains(errb, "missing-file") {
		t.Errorf("build failure: %d %s", code, errb)
	}
}

// TestEnvCLIDeployKilledThenPruned: a child process deploying an env is
// killed with SIGKILL while it waits for the gateway; prune then leaves no
// container or network of it.
func TestEnvCLIDeployKilledThenPruned(t *testing.T) {
	p := dockerOrSkip(t)
	bins := envdeploytest.Build(t)
	c := newCLI(t)
	// A "gateway" that never lists its children keeps the deploy waiting
	// for readiness, so the kill always lands mid-run.
	c.mustRun(
		[]string{"env", "gateway", "put", "--id", "stuck", "--binary", bins.Echo},
		[]string{"env", "mcp-server", "put", "--id", "echo", "--binary", bins.Echo, "--environment-name", "echo"},
	)
	args, _ := json.Marshal([]string{"env", "deploy", "--id", "echo", "--sandbox", "local", "--gateway", "stuck"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCLI$")
	cmd.Env = append(os.Environ(), "AGENTENV_HELPER_ARGS="+string(args))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	owner := "pid:" + strconv.Itoa(cmd.Process.Pid)
	t.Cleanup(func() {
		_, _ = p.Prune(context.Background(), func(l map[string]string) bool { return l[envdeploy.LabelOwner] == owner })
		for _, repo := range []string{"stuck__env_image", "echo__env_image"} {
			_ = p.RemoveImage(context.Background(), c.imageRef(repo))
		}
	})
	deadline := time.Now().Add(120 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	// Kill once the child's gateway runs: the deploy is then polling for a
	// readiness that never comes.
	running := make(client.Filters).Add("label", envdeploy.LabelOwner+"="+owner).
		Add("label", envdeploy.LabelRole+"=gateway").Add("status", "running")
	for {
		list, err := p.Client().ContainerList(context.Background(), client.ContainerListOptions{Filters: running})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the child's gateway never ran")
		}
		<-tick.C
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if mine, _ := p.Labelled(context.Background(), envdeploy.LabelOwner, owner); len(mine) == 0 {
		t.Fatal("nothing was left to prune: the test proves nothing")
	}
	code, out, errb := c.run("sandbox", "prune")
	if code != 0 || !strings.Contains(out, "Removed container") || !strings.Contains(out, "Removed network") {
		t.Errorf("prune: %d %s %s", code, out, errb)
	}
	if mine, _ := p.Labelled(context.Background(), envdeploy.LabelOwner, owner); len(mine) != 0 {
		t.Errorf("left after prune: %v", mine)
	}
}

// TestRunEchoMCP: the echo-mcp bundle passes twice in a row on Docker (the
// first run registers the echo env and the gateway from source) and leaves
// nothing of this process behind; it also passes on the process sandbox.
func TestRunEchoMCP(t *testing.T) {
	p := dockerOrSkip(t)
	bins := envdeploytest.Build(t)
	c := newCLI(t)
	// The gateway from the prebuilt binary (compiling it again here is the
	// slow part); the echo env is left for the bundle to build from source.
	if code, out, errb := c.run("env", "gateway", "put", "--binary", bins.Gateway); code != 0 {
		t.Fatalf("gateway put: %s %s", out, errb)
	}
	owner := "pid:" + strconv.Itoa(os.Getpid())
	for i := range 2 {
		code, out, errb := c.run("run", "echo-mcp")
		if code != 0 || !strings.Contains(out, "passed (echo: 1)") {
			t.Fatalf("run %d: exit %d\n%s\n%s", i+1, code, out, errb)
		}
		mine, err := p.Labelled(context.Background(), envdeploy.LabelOwner, owner)
		if err != nil || len(mine) != 0 {
			t.Errorf("run %d left %v (%v)", i+1, mine, err)
		}
	}
	code, out, errb := c.run("run", "echo-mcp", "--sandbox", "process")
	if code != 0 || !strings.Contains(out, "passed (echo: 1)") {
		t.Fatalf("process run: exit %d\n%s\n%s", code, out, errb)
	}
	t.Cleanup(func() { removeEngineImages(t, p, c) })
}

// removeEngineImages drops the images the test's fresh state registered
// (echo__env_image and default__env_image version 1, tagged with the
// store id), which only this test's store knows about.
func removeEngineImages(t *testing.T, p *docker.Provider, c *cli) {
	for _, repo := range []string{"echo__env_image", "default__env_image"} {
		_ = p.RemoveImage(context.Background(), c.imageRef(repo))
	}
}

// imageRef is the tag the test's store gives version 1 of repository.
func (c *cli) imageRef(repository string) string {
	id, err := registry.StoreID(filepath.Join(c.stateRoot, "agent-env"))
	if err != nil {
		c.t.Fatal(err)
	}
	return "localhost:5000/" + repository + ":v1-" + id
}

func TestRunEchoMCPNoEngine(t *testing.T) {
	bins := envdeploytest.Build(t)
	c := newCLI(t)
	// Registered up front so that the run gets straight to the engine.
	if code, out, errb := c.run("env", "mcp-server", "put", "--id", "echo", "--binary", bins.Echo, "--environment-name", "echo"); code != 0 {
		t.Fatalf("put: %s %s", out, errb)
	}
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	code, out, _ := c.run("run", "echo-mcp")
	if code != 1 || !strings.Contains(out, "no Docker engine answers at tcp://127.0.0.1:1") || !strings.Contains(out, "--sandbox process") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

// TestAgentCLIProcess: a2a-agent put, deploy into an env instance, get,
// get-instance and teardown, on the process sandbox.
func TestAgentCLIProcess(t *testing.T) {
	bins := envdeploytest.Build(t)
	c := newCLI(t)
	c.mustRun(
		[]string{"env", "gateway", "put", "--binary", bins.Gateway},
		[]string{"env", "mcp-server", "put", "--id", "echo", "--binary", bins.Echo, "--environment-name", "echo"},
	)
	code, out, errb := c.run("a2a-agent", "put", "--id", "scripted", "--binary", bins.Agent, "--env-var", "SCRIPTED_AGENT_SCRIPT="+envdeploytest.Script)
	if code != 0 || !strings.Contains(out, "Created A2A agent: id=scripted version=1 image=a2a-agent-scripted:1") {
		t.Fatalf("agent put: %d %s %s", code, out, errb)
	}
	if code, out, _ := c.run("a2a-agent", "get", "--id", "scripted"); code != 0 || !strings.Contains(out, `"type": "a2a_agent"`) {
		t.Errorf("agent get: %d %s", code, out)
	}
	code, out, errb = c.run("env", "deploy", "--id", "echo", "--sandbox", "process")
	env := instanceIDRe.FindStringSubmatch(out)
	if code != 0 || env == nil {
		t.Fatalf("env deploy: %s %s", out, errb)
	}
	t.Cleanup(func() { c.run("env", "teardown", "--instance-id", env[1]) })
	code, out, errb = c.run("a2a-agent", "deploy", "--id", "scripted", "--env-instance", env[1])
	agent := instanceIDRe.FindStringSubmatch(out)
	if code != 0 || agent == nil || !strings.Contains(out, "Agent Url: http://127.0.0.1:") {
		t.Fatalf("agent deploy: %d %s %s", code, out, errb)
	}
	if code, out, _ := c.run("a2a-agent", "get-instance", "--id", agent[1]); code != 0 || !strings.Contains(out, `"env_instance_ids": [`) || !strings.Contains(out, env[1]) {
		t.Errorf("agent get-instance: %d %s", code, out)
	}
	for range 2 {
		if code, out, errb := c.run("a2a-agent", "teardown", "--instance-id", agent[1]); code != 0 || out != "Tore down "+agent[1]+".\n" {
			t.Errorf("agent teardown: %d %q %s", code, out, errb)
		}
	}
	if code, _, _ := c.run("env", "teardown", "--instance-id", env[1]); code != 0 {
		t.Error("env teardown failed")
	}
	if left, _ := os.ReadDir(filepath.Join(c.sandboxDir, "process")); len(left) != 0 {
		t.Errorf("process groups left: %v", left)
	}
}
