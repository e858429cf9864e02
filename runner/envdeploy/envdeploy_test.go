package envdeploy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
	"github.com/agentenv/agentenv/runner/sandbox/process"
)

func TestMain(m *testing.M) {
	code := m.Run()
	envdeploytest.Cleanup()
	os.Exit(code)
}

func TestOrphaned(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	me := "pid:" + strconv.Itoa(os.Getpid())
	live := func(id string) bool { return id == "recorded" }
	cases := []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"other": "x"}, false}, // not ours
		{map[string]string{envdeploy.LabelInstance: "a", envdeploy.LabelOwner: me}, false},
		{map[string]string{envdeploy.LabelInstance: "a", envdeploy.LabelOwner: me, envdeploy.LabelExpires: "999999"}, true},
		{map[string]string{envdeploy.LabelInstance: "a", envdeploy.LabelOwner: "pid:999999999"}, true},
		{map[string]string{envdeploy.LabelInstance: "recorded", envdeploy.LabelOwner: "pid:999999999", envdeploy.LabelPersist: "true"}, false},
		{map[string]string{envdeploy.LabelInstance: "gone", envdeploy.LabelOwner: "pid:999999999", envdeploy.LabelPersist: "true"}, true},
		{map[string]string{envdeploy.LabelInstance: "a", envdeploy.LabelOwner: "garbage"}, true},
	}
	f := envdeploy.Orphaned(now, live)
	for _, c := range cases {
		if got := f(c.labels); got != c.want {
			t.Errorf("Orphaned(%v) = %v, want %v", c.labels, got, c.want)
		}
	}
}

// PruneRule keeps other stores' resources (and unlabelled ones) unless
// AllStores, whatever their owner, and says why; the owner start label
// tells a reused pid from the owner.
func TestPruneRuleStores(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	dead := func(store string) map[string]string {
		l := map[string]string{envdeploy.LabelInstance: "a", envdeploy.LabelOwner: "pid:999999999"}
		if store != "" {
			l[envdeploy.LabelStore] = store
		}
		return l
	}
	mine := envdeploy.PruneRule{Now: now, StoreID: "s1"}
	all := envdeploy.PruneRule{Now: now, StoreID: "s1", AllStores: true}
	for _, c := range []struct {
		rule   envdeploy.PruneRule
		labels map[string]string
		orphan bool
		why    string
	}{
		{mine, dead("s1"), true, "owner gone"},
		{mine, dead("s2"), false, "belongs to another store (s2)"},
		{mine, dead(""), false, "carries no store id"},
		{all, dead("s2"), true, "owner gone"},
		{all, dead(""), true, "owner gone"},
	} {
		orphan, why := c.rule.Decide(c.labels)
		if orphan != c.orphan || !strings.Contains(why, c.why) {
			t.Errorf("%+v on %v = %v %q, want %v %q", c.rule, c.labels, orphan, why, c.orphan, c.why)
		}
	}
	// This process's own labels: alive; the same pid with another start
	// time (a reused pid): gone.
	l := envdeploy.OwnerLabels("a", false, time.Time{})
	l[envdeploy.LabelStore] = "s1"
	if orphan, why := mine.Decide(l); orphan || !strings.Contains(why, "is running") {
		t.Errorf("own resource: %v %q", orphan, why)
	}
	boot, _, _ := strings.Cut(l[envdeploy.LabelOwnerStart], "/")
	l[envdeploy.LabelOwnerStart] = boot + "/1"
	if orphan, _ := mine.Decide(l); !orphan {
		t.Errorf("a reused pid counts as the owner: %v", l)
	}
}

func TestDeriveAndValidateNames(t *testing.T) {
	root, err := envdeploytest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := envdeploy.DeriveEnvironmentName(envdeploy.ImageInput{GoPackage: "./examples/envs/echo/cmd/echo-env", GoDir: root}); err != nil || n != "echo" {
		t.Errorf("from Go source: %q %v", n, err)
	}
	// --go-package . in the package's folder: a relative path walks up too.
	t.Chdir(filepath.Join(root, "examples", "envs", "echo", "cmd", "echo-env"))
	if n, err := envdeploy.DeriveEnvironmentName(envdeploy.ImageInput{GoPackage: "."}); err != nil || n != "echo" {
		t.Errorf("from --go-package .: %q %v", n, err)
	}
	df := filepath.Join(t.TempDir(), "Dockerfile")
	_ = os.WriteFile(df, []byte("FROM scratch\nENV ENVIRONMENT_NAME=items\n"), 0o644)
	if n, err := envdeploy.DeriveEnvironmentName(envdeploy.ImageInput{Dockerfile: df}); err != nil || n != "items" {
		t.Errorf("from Dockerfile: %q %v", n, err)
	}
	_ = os.WriteFile(df, []byte("FROM scratch\n"), 0o644)
	if _, err := envdeploy.DeriveEnvironmentName(envdeploy.ImageInput{Dockerfile: df}); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("no name: %v", err)
	}
	for _, bad := range []string{"", "Items", "a_b", "gateway", "-x", strings.Repeat("a", 64)} {
		if envdeploy.ValidEnvironmentName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPutValidation(t *testing.T) {
	st := envdeploytest.NewStores(t)
	p := &envdeploy.Putter{Stores: st}
	ctx := context.Background()
	for _, in := range []envdeploy.MCPServerInput{
		{ID: "x"},
		{ID: "x", Image: envdeploy.ImageInput{GoPackage: "./a", ImageRef: "r:1"}},
		{ID: "x", Image: envdeploy.ImageInput{Context: "."}},
		{ID: "x", Image: envdeploy.ImageInput{ImageRef: "r:1"}, EnvironmentName: "ok", EnvProviderType: "cloud"},
		{ID: "Bad:Id", Image: envdeploy.ImageInput{ImageRef: "r:1"}, EnvironmentName: "ok"},
	} {
		if _, err := p.PutMCPServer(ctx, in); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", in, err)
		}
	}
	if _, err := p.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "x", EnvironmentName: "x", Image: envdeploy.ImageInput{Dockerfile: "/nope/Dockerfile"}}); err == nil || !strings.Contains(err.Error(), "/nope/Dockerfile") {
		t.Errorf("missing Dockerfile: %v", err)
	}
	df := filepath.Join(t.TempDir(), "Dockerfile")
	_ = os.WriteFile(df, []byte("FROM scratch\n"), 0o644)
	if _, err := p.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "x", EnvironmentName: "x", Image: envdeploy.ImageInput{Dockerfile: df}}); !errors.Is(err, envdeploy.ErrEngineUnavailable) {
		t.Errorf("--dockerfile without an engine: %v", err)
	}
	if _, err := p.PutMulti(ctx, envdeploy.MultiInput{ID: "m"}); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("empty multi: %v", err)
	}
	if _, err := p.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "a", EnvironmentName: "same", Image: envdeploy.ImageInput{ImageRef: "r:1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "b", EnvironmentName: "same", Image: envdeploy.ImageInput{ImageRef: "r:2"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PutMulti(ctx, envdeploy.MultiInput{ID: "m", MCPServers: []string{"a", "b"}}); err == nil || !strings.Contains(err.Error(), "also used by") {
		t.Errorf("duplicate environment names: %v", err)
	}
}

// A chain whose first provider has no engine falls back to the next; a
// chain where all fail names every failure.
func TestFallbackChain(t *testing.T) {
	bins := envdeploytest.Build(t)
	st := envdeploytest.NewStores(t)
	ctx := context.Background()
	p := &envdeploy.Putter{Stores: st}
	if _, err := p.PutGateway(ctx, "default", envdeploy.ImageInput{Binary: bins.Gateway}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "echo", EnvironmentName: "echo", Image: envdeploy.ImageInput{Binary: bins.Echo}}); err != nil {
		t.Fatal(err)
	}
	gone, err := docker.New(&docker.Options{Host: "tcp://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	proc := process.New(t.TempDir(), nil)
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"local": gone, "process": proc}, ReadyTimeout: 60 * time.Second}
	if _, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "echo"}, Sandbox: "local"}); !errors.Is(err, envdeploy.ErrEngineUnavailable) || !strings.Contains(err.Error(), "no Docker engine answers") {
		t.Errorf("no engine: %v", err)
	}
	if _, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "echo"}, Sandbox: "local,nope"}); err == nil || !strings.Contains(err.Error(), `unknown sandbox provider "nope"`) {
		t.Errorf("unknown provider in chain: %v", err)
	}
	inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "echo"}, Sandbox: "local, process"})
	if err != nil {
		t.Fatal(err)
	}
	if inst.SandboxType != "process" {
		t.Errorf("fell back to %q", inst.SandboxType)
	}
	if err := d.Teardown(ctx, inst.InstanceID); err != nil {
		t.Fatal(err)
	}
	if left := proc.Groups(); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

// A dynamically linked gateway binary is refused before any image or
// record is made, with an error naming the file and the static build.
func TestPutGatewayRefusesDynamicBinary(t *testing.T) {
	src := "/bin/true" // dynamically linked against libc on Debian
	b, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("no %s: %v", src, err)
	}
	bin := filepath.Join(t.TempDir(), "agentenv-gateway")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	st := envdeploytest.NewStores(t)
	p := &envdeploy.Putter{Stores: st}
	_, err = p.PutGateway(context.Background(), "default", envdeploy.ImageInput{Binary: bin})
	if !errors.Is(err, imagebuild.ErrNotStatic) {
		t.Fatalf("dynamic gateway binary: %v", err)
	}
	for _, want := range []string{bin, "dynamically linked", "CGO_ENABLED=0 go build -o " + bin + " ./cmd/agentenv-gateway"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := st.Docs.Versions(context.Background(), registry.Envs, "default"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("gateway env recorded after the refusal: %v", err)
	}
}
