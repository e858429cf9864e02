package collectartifacts_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
	"github.com/agentenv/agentenv/runner/sandbox/local"
	"github.com/agentenv/agentenv/runner/steps"
)

func TestMain(m *testing.M) {
	code := m.Run()
	envdeploytest.Cleanup()
	os.Exit(code)
}

const secret = "HOST-SECRET-never-collected"

type fixture struct {
	r   *runner.Runner
	svc *runner.Services
}

func newFixture(t *testing.T, providers map[string]runner.SandboxProvider) *fixture {
	t.Helper()
	st := envdeploytest.NewStores(t)
	return &fixture{
		r: runner.New(&runner.Options{Steps: steps.Builtin()}),
		svc: &runner.Services{Documents: st.Docs, Objects: st.Artifacts.Objects(), Artifacts: st.Artifacts,
			Sandboxes: providers},
	}
}

// deploy runs the deploy_sandbox step js and returns the run context
// (torn down at cleanup) and the sandbox, for the test to plant files in as
// an agent would.
func (f *fixture) deploy(t *testing.T, js string) (*runner.RunContext, sandbox.Sandbox) {
	t.Helper()
	rc := runner.NewRunContext(map[string]any{"task_id": "t", "instance_id": "i"}, f.svc)
	t.Cleanup(func() { _, _ = f.r.TeardownRun(context.Background(), rc, 0) })
	if err := f.run(t, rc, "["+js+"]"); err != nil {
		t.Fatalf("deploying the sandbox: %v", err)
	}
	_, sb, err := rc.Sandbox(context.Background(), "box")
	if err != nil {
		t.Fatal(err)
	}
	return rc, sb
}

func (f *fixture) run(t *testing.T, rc *runner.RunContext, js string) error {
	t.Helper()
	task, err := f.r.ParseTask("t", 1, []byte(js))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	_, err = f.r.Run(context.Background(), task, rc, nil)
	return err
}

// collected is what step id recorded: the files and their contents.
func (f *fixture) collected(t *testing.T, rc *runner.RunContext, id string) map[string]string {
	t.Helper()
	e := mustMap(rc, id)
	if e == nil {
		return nil
	}
	arts, _ := f.svc.ArtifactStore()
	ctx := context.Background()
	u, err := arts.GetUniverse(ctx, registry.Ref{ID: e["id"].(string)})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, ref := range u.FileArtifactRefs {
		rd, _, err := arts.OpenFile(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rd)
		rd.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(b)
	}
	return out
}

// leaked reports whether the secret reached the store as a file artifact.
func (f *fixture) leaked(t *testing.T) bool {
	t.Helper()
	ctx := context.Background()
	docs, err := f.svc.Artifacts.List(ctx, &registry.ListOptions{Type: artifact.TypeFile})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rd, _, err := f.svc.Artifacts.OpenFile(ctx, d.Ref())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rd)
		rd.Close()
		if bytes.Contains(b, []byte(secret)) {
			return true
		}
	}
	return false
}

// collectCases is one collect_artifacts step per way of naming the files.
var collectCases = map[string]string{
	"listed": `{"id":"c","type":"collect_artifacts","sandbox_name":"box"}`,
	"named":  `{"id":"c","type":"collect_artifacts","sandbox_name":"box","artifact_paths":["ok.txt","x"]}`,
}

// On a local sandbox, a link planted in the collected folder that leads to
// a host file or folder outside it fails the step, naming the link and its
// target; nothing of the host file reaches the store.
func TestCollectLocalLinksOutside(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, target string }{
		{"host-file", filepath.Join(outside, "secret.txt")},
		{"host-folder", outside},
		{"dotdot-chain", "../../../../../../../../../../.." + filepath.Join(outside, "secret.txt")},
		{"parent", ".."},
		{"loop", "x"},
	} {
		for how, step := range collectCases {
			t.Run(c.name+"/"+how, func(t *testing.T) {
				f := newFixture(t, map[string]runner.SandboxProvider{"local": local.New(t.TempDir(), nil)})
				rc, sb := f.deploy(t, `{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"}`)
				dir := filepath.Join(sb.(*local.Sandbox).Dir(), "artifact")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("fine"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(c.target, filepath.Join(dir, "x")); err != nil {
					t.Fatal(err)
				}
				err := f.run(t, rc, "["+step+"]")
				if err == nil || !strings.Contains(err.Error(), "/app/artifact/x -> "+c.target) {
					t.Errorf("collect: %v, want a failure naming /app/artifact/x -> %s", err, c.target)
				}
				if got := f.collected(t, rc, "c"); got != nil {
					t.Errorf("collected %v", got)
				}
				if f.leaked(t) {
					t.Error("the host file's content is in the object store")
				}
			})
		}
	}
}

// Links inside the collected folder are followed: a file under the link's
// path with the target's content, a folder walked.
func TestCollectLocalLinksInside(t *testing.T) {
	f := newFixture(t, map[string]runner.SandboxProvider{"local": local.New(t.TempDir(), nil)})
	rc, sb := f.deploy(t, `{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"}`)
	dir := filepath.Join(sb.(*local.Sandbox).Dir(), "artifact")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "ok.txt"), []byte("fine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"x": "sub/ok.txt", "abs": filepath.Join(dir, "sub", "ok.txt"), "d": "sub"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.run(t, rc, `[{"id":"all","type":"collect_artifacts","sandbox_name":"box"},
	 {"id":"named","type":"collect_artifacts","sandbox_name":"box","artifact_paths":["x"],"universe_id_suffix":"n"}]`); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"abs": "fine", "d/ok.txt": "fine", "sub/ok.txt": "fine", "x": "fine"}
	if got := f.collected(t, rc, "all"); !equal(got, want) {
		t.Errorf("listed: %v, want %v", got, want)
	}
	if got := f.collected(t, rc, "named"); !equal(got, map[string]string{"x": "fine"}) {
		t.Errorf("named: %v", got)
	}
	files, _ := json.Marshal(mustMap(rc, "all")["files"])
	if string(files) != `["abs","d/ok.txt","sub/ok.txt","x"]` {
		t.Errorf("files %s", files)
	}
}

func mustMap(rc *runner.RunContext, id string) map[string]any {
	all, _ := rc.Metadata("collected_artifacts")
	byStep, _ := all.(map[string]any)
	m, _ := byStep[id].(map[string]any)
	return m
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// On a container sandbox, links come out of the archive API as link
// entries: one inside is collected with its target's content (not as an
// empty file), one outside fails the step by name.
func TestCollectDockerLinks(t *testing.T) {
	p := dockerOrSkip(t)
	const ref = "localhost:5000/agentenvtest-collect/echo:v1"
	envdeploytest.LoadEchoImage(t, p, ref)

	for name, c := range map[string]struct {
		step string
		want map[string]string // nil: the step fails naming the link
	}{
		"inside-named":   {`{"id":"c","type":"collect_artifacts","sandbox_name":"box","artifact_paths":["in"]}`, map[string]string{"in": "fine"}},
		"inside-listed":  {`{"id":"c","type":"collect_artifacts","sandbox_name":"box","exclude_basenames":["out"]}`, map[string]string{"in": "fine", "ok.txt": "fine"}},
		"outside-named":  {`{"id":"c","type":"collect_artifacts","sandbox_name":"box","artifact_paths":["out"]}`, nil},
		"outside-listed": {`{"id":"c","type":"collect_artifacts","sandbox_name":"box"}`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, map[string]runner.SandboxProvider{"docker": p})
			rc, sb := f.deploy(t, `{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"container","sandbox_type":"docker","image":"`+ref+`"}`)
			bg := context.Background()
			for path, content := range map[string]string{"/app/artifact/ok.txt": "fine", "/app/secret.txt": secret} {
				if err := sb.WriteFile(bg, path, strings.NewReader(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var tb bytes.Buffer
			tw := tar.NewWriter(&tb)
			for link, target := range map[string]string{"app/artifact/in": "ok.txt", "app/artifact/out": "../secret.txt"} {
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: link, Linkname: target, Mode: 0o777}); err != nil {
					t.Fatal(err)
				}
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Client().CopyToContainer(bg, sb.(*docker.Sandbox).ContainerID(), client.CopyToContainerOptions{DestinationPath: "/", Content: &tb}); err != nil {
				t.Fatal(err)
			}
			err := f.run(t, rc, "["+c.step+"]")
			if c.want == nil {
				if err == nil || !strings.Contains(err.Error(), "/app/artifact/out -> ../secret.txt") {
					t.Errorf("collect: %v, want a failure naming /app/artifact/out -> ../secret.txt", err)
				}
				if f.leaked(t) {
					t.Error("the outside file's content is in the object store")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.collected(t, rc, "c"); !equal(got, c.want) {
				t.Errorf("collected %v, want %v", got, c.want)
			}
		})
	}
}

// dockerOrSkip is a provider on the local engine, closed at cleanup;
// without an engine the test is skipped, or fails under CI=true.
func dockerOrSkip(t *testing.T) *docker.Provider {
	t.Helper()
	p, err := docker.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Check(ctx); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no Docker engine: %v", err)
		}
		t.Skipf("no Docker engine: %v", err)
	}
	return p
}

// agent_name and env_id collect from the sandbox the agent or env was
// deployed in; a provider that cannot copy files out fails the step naming
// the provider and the env, and nothing is stored.
func TestCollectFromAgentAndEnv(t *testing.T) {
	f := newFixture(t, map[string]runner.SandboxProvider{"local": local.New(t.TempDir(), nil)})
	rc, sb := f.deploy(t, `{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"}`)
	dir := filepath.Join(sb.(*local.Sandbox).Dir(), "artifact")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.txt"), []byte("done"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An agent placed on the sandbox, and an env whose instance has no file
	// access (an instance held without a way to copy out).
	if err := rc.AddAgentEntry(map[string]any{"agent_name": "worker", "sandbox_id": sb.ID(), "sandbox_type": "local"}); err != nil {
		t.Fatal(err)
	}
	rc.HoldSandbox(&runner.InstanceSandbox{SandboxID: "remote-env1", SandboxType: "remote", Kind: "env", InstanceID: "inst-1"})
	if err := rc.AddEnvEntry(map[string]any{"env_id": "email", "sandbox_id": "remote-env1", "sandbox_type": "remote", "instance_id": "inst-1"}); err != nil {
		t.Fatal(err)
	}
	if err := f.run(t, rc, `[{"id":"a","type":"collect_artifacts","agent_name":"worker"}]`); err != nil {
		t.Fatal(err)
	}
	if got := f.collected(t, rc, "a"); !equal(got, map[string]string{"report.txt": "done"}) {
		t.Errorf("from agent: %v", got)
	}
	err := f.run(t, rc, `[{"id":"e","type":"collect_artifacts","env_id":"email"}]`)
	if !errors.Is(err, sandbox.ErrNotSupported) || !strings.Contains(err.Error(), "the remote sandbox provider cannot copy files out of env \"email\"") {
		t.Errorf("from an env that cannot copy out: %v", err)
	}
	if got := f.collected(t, rc, "e"); got != nil {
		t.Errorf("collected %v", got)
	}
	if err := f.run(t, rc, `[{"id":"n","type":"collect_artifacts","agent_name":"nobody"}]`); err == nil || !strings.Contains(err.Error(), "agent_name") {
		t.Errorf("unknown agent: %v", err)
	}
	if _, err := f.r.ParseTask("t", 1, []byte(`[{"id":"c","type":"collect_artifacts","agent_name":"worker","env_id":"email"}]`)); err == nil {
		t.Error("two sources accepted")
	}
}
