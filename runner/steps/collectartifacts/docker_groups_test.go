package collectartifacts_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// On Docker, agent_name and env_id collect from the container of the
// agent, or of the env's server (never the gateway's): files written in
// the container are collected, a link that leaves base_path fails the step
// naming it with nothing stored, and a copy past its size limit fails the
// same way on the group as on every sandbox.
func TestCollectFromDockerAgentAndEnv(t *testing.T) {
	p := dockerOrSkip(t)
	me := "pid:" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() {
		// Nothing of this process may survive the test.
		_, _ = p.Prune(context.Background(), func(l map[string]string) bool { return l[envdeploy.LabelOwner] == me })
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	bins := envdeploytest.Build(t)
	st := envdeploytest.NewStores(t)
	put := &envdeploy.Putter{Stores: st, Builder: p, TempDir: t.TempDir()}
	var refs []string
	t.Cleanup(func() {
		for _, r := range refs {
			_ = p.RemoveImage(context.Background(), r)
		}
	})
	gw, err := put.PutGateway(ctx, envdeploy.DefaultGatewayID, envdeploy.ImageInput{Binary: bins.Gateway})
	if err != nil {
		t.Fatal(err)
	}
	echo, err := put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "echo", EnvironmentName: "echo", Image: envdeploy.ImageInput{Binary: bins.Echo}})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := put.PutAgent(ctx, envdeploy.AgentInput{ID: "scripted", Image: envdeploy.ImageInput{Binary: bins.Agent}})
	if err != nil {
		t.Fatal(err)
	}
	refs = append(refs, gw.ImageName, echo.ImageName, agent.ImageName)
	dep := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"docker": p}, DefaultSandbox: "docker",
		AgentSandbox: "docker", ReadyTimeout: 120 * time.Second}
	f := newFixture(t, nil)
	f.svc.Deployer = dep
	rc := runner.NewRunContext(map[string]any{"task_id": "t", "instance_id": "i"}, f.svc)
	t.Cleanup(func() { _, _ = f.r.TeardownRun(context.Background(), rc, 0) })
	if err := f.run(t, rc, `[{"id":"env","type":"deploy_env","env_id":"echo","ttl_seconds":600},
	 {"id":"agent","type":"deploy_agent","agent_name":"worker","a2a_agent_id":"scripted","env_ids":["echo"]}]`); err != nil {
		t.Fatal(err)
	}
	sid := func(key, field, name string) string {
		id, err := rc.EntrySandboxID(key, field, name)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	envGroup, agentGroup := sid(runner.KeyDeployedEnvs, "env_id", "echo"), sid(runner.KeyDeployedAgents, "agent_name", "worker")
	// plant writes files and links into a container through the archive
	// API, as a process inside it would leave them (the images have no
	// shell).
	plant := func(container string, files, links map[string]string) {
		t.Helper()
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		for name, content := range files {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(content)), Mode: 0o644}); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write([]byte(content)); err != nil {
				t.Fatal(err)
			}
		}
		for name, target := range links {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Client().CopyToContainer(ctx, container, client.CopyToContainerOptions{DestinationPath: "/", Content: &tb}); err != nil {
			t.Fatal(err)
		}
	}
	plant(envGroup+"-echo", map[string]string{"app/artifact/mailbox.json": `{"sent":1}`, "app/artifact/sub/log.txt": "ok", "app/secret.txt": secret},
		map[string]string{"app/artifact/in": "sub/log.txt", "app/out/leak": "../secret.txt"})
	plant(agentGroup+"-agent", map[string]string{"app/artifact/report.txt": "done"}, nil)

	if err := f.run(t, rc, `[{"id":"a","type":"collect_artifacts","agent_name":"worker"},
	 {"id":"e","type":"collect_artifacts","env_id":"echo"}]`); err != nil {
		t.Fatal(err)
	}
	if got := f.collected(t, rc, "a"); !equal(got, map[string]string{"report.txt": "done"}) {
		t.Errorf("from the agent: %v", got)
	}
	if got := f.collected(t, rc, "e"); !equal(got, map[string]string{"mailbox.json": `{"sent":1}`, "sub/log.txt": "ok", "in": "ok"}) {
		t.Errorf("from the env: %v", got)
	}
	err = f.run(t, rc, `[{"id":"x","type":"collect_artifacts","env_id":"echo","base_path":"/app/out"}]`)
	if !errors.Is(err, sandbox.ErrLinkOutside) || !strings.Contains(err.Error(), "/app/out/leak -> ../secret.txt") {
		t.Errorf("a link out of base_path: %v", err)
	}
	if mustMap(rc, "x") != nil || f.leaked(t) {
		t.Error("something was stored after the refusal")
	}
	// The size limit, on the group as on a sandbox: the files up to the
	// limit pass, one byte less fails naming the file.
	copyOut := func(group string, max int64, o *sandbox.CopyOutOptions) error {
		if o == nil {
			o = &sandbox.CopyOutOptions{}
		}
		o.MaxBytes = max
		return dep.CopyOut(ctx, "docker", group, "/app/artifact", o, func(sandbox.File) error { return nil })
	}
	total := int64(len(`{"sent":1}`) + 2*len("ok"))
	if err := copyOut(envGroup, total, nil); err != nil {
		t.Errorf("copy at the limit: %v", err)
	}
	for _, o := range []*sandbox.CopyOutOptions{nil, {Skip: func(string) bool { return false }}} {
		if err := copyOut(envGroup, total-1, o); !errors.Is(err, sandbox.ErrTooLarge) || !strings.Contains(err.Error(), "/app/artifact") {
			t.Errorf("copy past the limit (filtered: %v): %v", o != nil, err)
		}
	}
}
