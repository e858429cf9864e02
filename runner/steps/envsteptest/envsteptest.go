// Package envsteptest is the fixture of the env and agent step tests: it
// builds the email env, the gateway and the scripted agent once per test
// binary, registers them in fresh stores and returns runner Services whose
// Deployer runs them as local processes (the process sandbox).
package envsteptest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/localimage"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundle"
	"github.com/agentenv/agentenv/runner/bundles"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
	"github.com/agentenv/agentenv/runner/sandbox/local"
	"github.com/agentenv/agentenv/runner/sandbox/process"
	"github.com/agentenv/agentenv/runner/steps"
)

// Binaries are the built fixtures.
type Binaries struct{ Email, Gateway, Agent string }

var (
	once   sync.Once
	bins   Binaries
	errB   error
	binDir string
)

// Build compiles the fixtures once per test binary.
func Build(t testing.TB) Binaries {
	t.Helper()
	once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			errB = err
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		binDir, errB = os.MkdirTemp("", "envsteptest-bin-")
		if errB != nil {
			return
		}
		o := &imagebuild.GoOptions{Dir: root}
		var wg sync.WaitGroup
		var mu sync.Mutex
		build := func(dst *string, pkg string) {
			defer wg.Done()
			p, err := imagebuild.BuildGo(context.Background(), pkg, binDir, o)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && errB == nil {
				errB = err
			}
			*dst = p
		}
		wg.Add(3)
		go build(&bins.Email, "./examples/envs/email/cmd/email-env")
		go build(&bins.Gateway, "./cmd/agentenv-gateway")
		go build(&bins.Agent, "./examples/agents/scripted")
		wg.Wait()
	})
	if errB != nil {
		t.Fatalf("envsteptest: build: %v", errB)
	}
	return bins
}

// Cleanup closes the shared fixtures and removes the built binaries (call
// from TestMain).
func Cleanup() {
	sharedMu.Lock()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
	closers, shared = nil, map[string]*Fixture{}
	sharedMu.Unlock()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

// Fixture is a runner with the built-in steps and Services over fresh
// stores holding envs "email" and "outbox" (two email servers), "solo" (an
// email server deployed alone: the server topology), the default gateway
// and agent "scripted".
type Fixture struct {
	Runner   *runner.Runner
	Services *runner.Services
	Putter   *envdeploy.Putter
}

// New builds the fixture on the process sandbox.
func New(t *testing.T) *Fixture { t.Helper(); return NewOn(t, "process") }

// NewB is New for benchmarks.
func NewB(b *testing.B) *Fixture { b.Helper(); return NewOn(b, "process") }

// NewOn builds the fixture on sandbox "process" or "docker" (skipping the
// test when no Docker engine answers). On Docker the images are built
// FROM scratch from the same binaries.
func NewOn(t testing.TB, sandbox string) *Fixture {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if f, ok := shared[sandbox]; ok {
		return f
	}
	f := newFixture(t, sandbox)
	shared[sandbox] = f
	return f
}

// Fixtures are shared by the tests of one test binary (registering the
// binaries in fresh stores is the slow part); Cleanup closes them.
var (
	sharedMu sync.Mutex
	shared   = map[string]*Fixture{}
	closers  []func()
)

func newFixture(t testing.TB, sandbox string) *Fixture {
	t.Helper()
	b := Build(t)
	dir, err := os.MkdirTemp("", "envsteptest-")
	if err != nil {
		t.Fatal(err)
	}
	closers = append(closers, func() { _ = os.RemoveAll(dir) })
	ctx := context.Background()
	docs, err := sqlite.Open(ctx, filepath.Join(dir, "documents.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	closers = append(closers, func() { docs.Close() })
	objs, err := fsobject.New(filepath.Join(dir, "objects"), nil)
	if err != nil {
		t.Fatal(err)
	}
	arts := artifact.New(docs, objs, nil)
	st := envdeploy.Stores{Docs: docs, Artifacts: arts, Images: localimage.New(nil)}
	if err := os.MkdirAll(filepath.Join(dir, "put"), 0o700); err != nil {
		t.Fatal(err)
	}
	put := &envdeploy.Putter{Stores: st, TempDir: filepath.Join(dir, "put")}
	var backend envdeploy.Backend
	switch sandbox {
	case "docker":
		dp, err := docker.New(nil)
		if err == nil {
			err = dp.Check(ctx)
		}
		if err != nil {
			t.Skipf("no Docker engine: %v", err)
		}
		closers = append(closers, func() { _ = dp.Close() })
		backend, put.Builder = dp, dp
		st.Images = localimage.New(&localimage.Options{RepositoryPrefix: "agentenvtest-" + runner.RandomHex(4)})
		// The images the fixture and its tests register go with it.
		ref, err := st.Images.Ref("x", 1)
		if err != nil {
			t.Fatal(err)
		}
		prefix := strings.TrimSuffix(ref, "x:v1")
		closers = append(closers, func() { removeImagesUnder(dp, prefix) })
		put.Stores = st
	default:
		pb := process.New(filepath.Join(dir, "proc"), nil)
		closers = append(closers, func() { _ = pb.Close() })
		backend = pb
	}
	if _, err := put.PutGateway(ctx, envdeploy.DefaultGatewayID, envdeploy.ImageInput{Binary: b.Gateway}); err != nil {
		t.Fatal(err)
	}
	if _, err := put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "email", EnvironmentName: "email",
		Image: envdeploy.ImageInput{Binary: b.Email}}); err != nil {
		t.Fatal(err)
	}
	if _, err := put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "outbox", EnvironmentName: "outbox",
		Image: envdeploy.ImageInput{Binary: b.Email}}); err != nil {
		t.Fatal(err)
	}
	if _, err := put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "solo", EnvironmentName: "solo", EnvProviderType: envdeploy.ProviderServer,
		Image: envdeploy.ImageInput{Binary: b.Email}}); err != nil {
		t.Fatal(err)
	}
	if _, err := put.PutAgent(ctx, envdeploy.AgentInput{ID: "scripted", Image: envdeploy.ImageInput{Binary: b.Agent}}); err != nil {
		t.Fatal(err)
	}
	dep := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{backend.Type(): backend}, DefaultSandbox: backend.Type(),
		AgentSandbox: backend.Type(), ReadyTimeout: 60 * time.Second, ObjectStoreDir: objs.Root()}
	return &Fixture{
		Runner: runner.New(&runner.Options{Steps: steps.Builtin()}),
		Services: &runner.Services{Documents: docs, Objects: objs, Artifacts: arts, Deployer: dep,
			Sandboxes: map[string]runner.SandboxProvider{"local": local.New(filepath.Join(dir, "local"), nil)}},
		Putter: put,
	}
}

// Run parses and runs a task; everything is torn down at cleanup.
func (f *Fixture) Run(t *testing.T, js string, initial map[string]any) (*runner.RunContext, *runner.Result, error) {
	t.Helper()
	return f.RunTask(t, "t", js, initial)
}

// RunTask is Run with a task id.
func (f *Fixture) RunTask(t *testing.T, id, js string, initial map[string]any) (*runner.RunContext, *runner.Result, error) {
	t.Helper()
	task, err := f.Runner.ParseTask(id, 1, []byte(js))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	rc := runner.NewRunContext(initial, f.Services)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := f.Runner.Run(ctx, task, rc, nil)
	t.Cleanup(func() { _, _ = f.Runner.TeardownRun(context.Background(), rc, 0) })
	return rc, res, err
}

// PutInbox stores an environment artifact for the email server.
func (f *Fixture) PutInbox(t *testing.T, id, seed string) {
	t.Helper()
	if _, err := f.Services.Artifacts.PutEnvironment(context.Background(), id, artifact.EnvironmentInput{
		EnvironmentName: "email", Filename: "inbox.json", ContentType: "application/json", Body: strings.NewReader(seed)}); err != nil {
		t.Fatal(err)
	}
}

// RunBundle materialises and runs an installed bundle (runner/bundles) on
// sandbox with the fixture's stores, then tears it down. It returns the
// report and the output.
func (f *Fixture) RunBundle(t *testing.T, name, sandbox string) (*bundle.Report, string) {
	t.Helper()
	timeout := 180 * time.Second
	if sandbox == "docker" {
		// Images registered during the run (an example's first use) are
		// loaded into the engine within it: a service_db example's database
		// image holds the host's PostgreSQL (hundreds of MB).
		timeout = 600 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	b, err := bundle.Locate(name, bundles.FS())
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	m, err := bundle.Materialise(ctx, b, bundle.Stores{Documents: f.Services.Documents, Artifacts: f.Services.Artifacts,
		LockDir: t.TempDir()}, f.Runner.Steps(), &out, nil)
	if err != nil {
		t.Fatalf("materialise %s: %v", name, err)
	}
	rep, err := bundle.Run(ctx, f.Runner, f.Services, m, &bundle.RunOptions{Sandbox: sandbox, Out: &out, Documents: f.Services.Documents})
	if err != nil {
		t.Fatalf("run %s: %v\n%s", name, err, out.String())
	}
	t.Cleanup(func() { _, _ = rep.Teardown(context.Background()) })
	return rep, out.String()
}

// PassBundle runs an installed bundle like RunBundle and holds it to the
// examples' CI gate: the bundle ran, every run passed and every
// verification scored 1. A miss fails t with the bundle's output.
func (f *Fixture) PassBundle(t *testing.T, name, sandbox string) (*bundle.Report, string) {
	t.Helper()
	rep, out := f.RunBundle(t, name, sandbox)
	if rep.Failed() {
		t.Fatalf("%s failed:\n%s", name, out)
	}
	for _, r := range rep.Runs {
		if r.Outcome != bundle.Passed {
			t.Errorf("%s: outcome %q\n%s", r.Task.File, r.Outcome, out)
		}
	}
	for _, rc := range rep.Contexts() {
		for id, v := range rc.Verifications() {
			if v.Score != 1 {
				b, _ := json.Marshal(v)
				t.Errorf("%s: verification %s: %s", name, id, b)
			}
		}
	}
	return rep, out
}

// removeImagesUnder removes every image of the engine with a tag starting
// with prefix (a fixture's repository prefix), and no other.
func removeImagesUnder(p *docker.Provider, prefix string) {
	ctx := context.Background()
	list, err := p.Client().ImageList(ctx, client.ImageListOptions{})
	if err != nil {
		return
	}
	for _, im := range list.Items {
		for _, tag := range im.RepoTags {
			if strings.HasPrefix(tag, prefix) {
				_ = p.RemoveImage(ctx, tag)
			}
		}
	}
}
