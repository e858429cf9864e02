package docker_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/examples/envs/echo"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
)

// A service on this machine (a model endpoint, here an MCP server) is
// reachable from an agent container at the URL ReachableURL makes of its
// loopback URL (host.docker.internal, mapped to the host gateway).
func TestHostReachableFromContainer(t *testing.T) {
	p := engine(t)
	t.Cleanup(func() { removeTestImages(t, p); p.Close() })
	bins := envdeploytest.Build(t)
	ctx := context.Background()

	// The host service listens on every interface, as a LiteLLM proxy
	// does, so that the bridge gateway address reaches it.
	env := map[string]string{"ENVIRONMENT_NAME": "alpha"}
	srv := echo.New(&envsdk.Options{Getenv: func(k string) string { return env[k] }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() { stop(); <-done })
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	st := envdeploytest.NewStores(t)
	put := &envdeploy.Putter{Stores: st, TempDir: t.TempDir()}
	if _, err := put.PutAgent(ctx, envdeploy.AgentInput{ID: "scripted", Image: envdeploy.ImageInput{Binary: bins.Agent}}); err != nil {
		t.Fatal(err)
	}
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"docker": p}, AgentSandbox: "docker"}
	ai, err := d.DeployAgent(ctx, envdeploy.AgentDeployRequest{Agent: registry.Ref{ID: "scripted"},
		EnvVars: map[string]string{"SCRIPTED_AGENT_SCRIPT": envdeploytest.Script}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.TeardownAgent(context.Background(), ai.InstanceID) })
	u := p.ReachableURL("http://127.0.0.1:" + port + "/mcp")
	if u != "http://host.docker.internal:"+port+"/mcp" {
		t.Fatalf("ReachableURL = %s", u)
	}
	ac := &agentsdktest.Client{BaseURL: ai.APIURL}
	if st, body, err := ac.Ext(ctx, http.MethodPost, protocol.AgentMCPConfigPath, map[string]any{"url": u, "name": "host"}); err != nil || st != 200 {
		t.Fatalf("mcp-config add: %d %s %v", st, body, err)
	}
	task, err := ac.Prompt(ctx, "c1", "please echo")
	if err != nil || task.Status.State != "completed" || !strings.Contains(task.Text(), "from-agent") {
		t.Fatalf("agent calling the host service: %+v %v", task, err)
	}
}
