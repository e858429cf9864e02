package dockercontainer_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
	"github.com/agentenv/agentenv/runner/sandbox/local"
	"github.com/agentenv/agentenv/runner/steps"
)

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

// minish builds the bundle's tiny shell, the test image's /bin/sh.
func minish(t *testing.T) []byte {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "minish")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/agentenv/agentenv/examples/bundles/minish")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build minish: %v\n%s", err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type fixture struct {
	r    *runner.Runner
	svc  *runner.Services
	p    *docker.Provider
	arts *artifact.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	p := dockerOrSkip(t)
	dir := t.TempDir()
	docs, err := sqlite.Open(context.Background(), filepath.Join(dir, "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docs.Close() })
	objs, err := fsobject.New(filepath.Join(dir, "o"), nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := &runner.Services{Documents: docs, Objects: objs, Sandboxes: map[string]runner.SandboxProvider{
		"local": local.New(filepath.Join(dir, "sb"), nil), docker.TypeName: p}}
	arts, _ := svc.ArtifactStore()
	return &fixture{r: runner.New(&runner.Options{Steps: steps.Builtin()}), svc: svc, p: p, arts: arts}
}

// image stores a build context: a FROM scratch Dockerfile around minish.
func (f *fixture) image(t *testing.T, id, dockerfilePath, dockerfile string, sh []byte) {
	t.Helper()
	ctx := context.Background()
	put := func(fid, name string, body []byte) registry.Ref {
		a, err := f.arts.PutFile(ctx, fid, artifact.FileInput{Filename: name, Body: strings.NewReader(string(body))})
		if err != nil {
			t.Fatal(err)
		}
		return a.Ref()
	}
	members := map[string]registry.Ref{
		dockerfilePath: put(id+"-dockerfile", filepath.Base(dockerfilePath), []byte(dockerfile)),
		"minish":       put(id+"-minish", "minish", sh),
	}
	if _, err := f.arts.PutUniverse(ctx, id, members, nil); err != nil {
		t.Fatal(err)
	}
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

// labelled lists the engine objects (containers, networks, images)
// carrying the group label of the sandbox's task containers.
func (f *fixture) labelled(t *testing.T, gid string) []string {
	t.Helper()
	out, err := f.p.Labelled(context.Background(), envdeploy.LabelSandbox, gid)
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := f.p.Client().ImageList(context.Background(), client.ImageListOptions{
		Filters: make(client.Filters).Add("label", envdeploy.LabelSandbox+"="+gid)})
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range imgs.Items {
		out = append(out, "image "+im.ID)
	}
	return out
}

const dockerfile = "FROM scratch\nCOPY minish /bin/sh\nARG GREETING\nENV GREETING=$GREETING\nCMD [\"/bin/sh\", \"serve\", \"8080\"]\n"

// A coding task on Docker: the answer written in a local sandbox is
// mounted into a container built from an artifact (build args, env,
// networks, a published port, a ready command); the unit-test verifier
// scores by exit code, or by a reward file, records its outputs and
// extracted files; a failing and a timed-out command are scored 0 and fail
// the step after recording; teardown removes every container, network
// and image of the group.
func TestRunDockerContainerAndUnitTests(t *testing.T) {
	f := newFixture(t)
	f.image(t, "tests-image", "docker/Containerfile", dockerfile, minish(t))
	rc := runner.NewRunContext(nil, f.svc)
	t.Cleanup(func() { _, _ = f.r.TeardownRun(context.Background(), rc, 0) })
	if err := f.run(t, rc, `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"}]`); err != nil {
		t.Fatal(err)
	}
	ds, sb, err := rc.Sandbox(context.Background(), "box")
	if err != nil {
		t.Fatal(err)
	}
	// The agent's work: an answer file in the sandbox.
	if err := sb.WriteFile(context.Background(), "/app/solution/answer.txt", strings.NewReader("sum=5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = f.run(t, rc, `[
	 {"id":"up","type":"run_docker_container","sandbox_name":"box","docker_context_artifact_id":"tests-image",
	  "dockerfile_path":"docker/Containerfile","container_name":"tests","ports":[8080],"env_vars":{"FOO":"bar"},
	  "build_args":{"GREETING":"hello"},"network":"net1","extra_networks":["net2"],"ready_command":"test -f /bin/sh",
	  "volumes":["/app/solution:/solution:ro"]},
	 {"id":"unit","type":"run_container_unit_tests_verifier","sandbox_name":"box","container_name":"tests",
	  "command":"grep -q sum=5 /solution/answer.txt && printenv FOO > /out/foo.txt && printenv GREETING > /out/greeting.txt && echo passed",
	  "result_paths":["/out/foo.txt","/out/greeting.txt","/out/none.txt"]},
	 {"id":"graded","type":"run_container_unit_tests_verifier","sandbox_name":"box","container_name":"tests","verifier_id":"reward",
	  "command":"echo 0.5 > /out/reward.txt && exit 3","reward_path":"/out/reward.txt"}]`)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := rc.Metadata("deployed_docker_containers")
	list, _ := v.([]any)
	if len(list) != 1 {
		t.Fatalf("deployed_docker_containers = %v", v)
	}
	entry := list[0].(map[string]any)
	gid := ds.SandboxID + "-containers"
	for k, want := range map[string]any{"container_name": "tests", "sandbox_name": "box", "sandbox_id": ds.SandboxID,
		"image_tag": gid + "-tests:latest", "network": "net1", "docker_container_name": gid + "-tests"} {
		if entry[k] != want {
			t.Errorf("entry %s = %v, want %v", k, entry[k], want)
		}
	}
	u, _ := entry["tunnel_urls"].(map[string]any)["8080"].(string)
	res, err := http.Get(u)
	if err != nil {
		t.Fatalf("published port: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "ok\n" {
		t.Errorf("GET %s = %q", u, body)
	}
	verifs, _ := rc.Metadata("verifications")
	unit := verifs.(map[string]any)["unit"].(map[string]any)
	if unit["score"] != 1.0 || unit["exit_code"] != 0.0 && unit["exit_code"] != 0 || unit["timed_out"] != false || unit["stdout_head"] != "passed\n" {
		t.Errorf("unit verification: %v", unit)
	}
	ex := unit["extracted_files"].(map[string]any)
	if ex["/out/foo.txt"] != "bar\n" || ex["/out/greeting.txt"] != "hello\n" || ex["/out/none.txt"] != nil {
		t.Errorf("extracted_files = %v", ex)
	}
	out, _ := unit["stdout_artifact"].(map[string]any)
	id, _ := out["id"].(string)
	r, _, err := f.arts.OpenFile(context.Background(), registry.Ref{ID: id})
	if err != nil {
		t.Fatalf("stdout artifact %v: %v", out, err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "passed\n" {
		t.Errorf("stdout artifact = %q", b)
	}
	graded := verifs.(map[string]any)["reward"].(map[string]any)
	row := graded["results"].([]any)[0].(map[string]any)
	if graded["score"] != 0.5 || row["id"] != "reward" || row["result"] != false {
		t.Errorf("reward verification: %v", graded)
	}

	// A failing test and a timed-out one: recorded, score 0, step failed.
	err = f.run(t, rc, `[{"id":"bad","type":"run_container_unit_tests_verifier","sandbox_name":"box","container_name":"tests",
	  "command":"grep -q sum=6 /solution/answer.txt"}]`)
	if err == nil || !strings.Contains(err.Error(), `verifier "bad" exited 1`) || !strings.Contains(err.Error(), "does not contain") {
		t.Errorf("failing test: %v", err)
	}
	err = f.run(t, rc, `[{"id":"slow","type":"run_container_unit_tests_verifier","sandbox_name":"box","container_name":"tests",
	  "command":"sleep 30","timeout_sec":0.5}]`)
	if err == nil || !strings.Contains(err.Error(), `verifier "slow" timed out after 500ms`) {
		t.Errorf("timed-out test: %v", err)
	}
	verifs, _ = rc.Metadata("verifications")
	for id, code := range map[string]float64{"bad": 1, "slow": 124} {
		v := verifs.(map[string]any)[id].(map[string]any)
		if v["score"] != 0.0 || v["exit_code"] != code || v["timed_out"] != (id == "slow") {
			t.Errorf("%s verification: %v", id, v)
		}
	}

	if left := f.labelled(t, gid); len(left) < 4 { // container, 2 networks, image
		t.Errorf("before teardown: %v", left)
	}
	if _, err := f.r.TeardownRun(context.Background(), rc, 0); err != nil {
		t.Fatal(err)
	}
	if left := f.labelled(t, gid); len(left) != 0 {
		t.Errorf("after teardown: %v", left)
	}
}

// A build that fails, a ready_command that never passes, and a container
// name used twice fail the step naming the cause; what the failed steps
// created is removed by the run's teardown all the same.
func TestRunDockerContainerFailures(t *testing.T) {
	f := newFixture(t)
	sh := minish(t)
	f.image(t, "good", "Dockerfile", dockerfile, sh)
	f.image(t, "broken", "Dockerfile", "FROM scratch\nCOPY missing-file /x\n", sh)
	rc := runner.NewRunContext(nil, f.svc)
	t.Cleanup(func() { _, _ = f.r.TeardownRun(context.Background(), rc, 0) })
	if err := f.run(t, rc, `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"}]`); err != nil {
		t.Fatal(err)
	}
	ds, _, _ := rc.Sandbox(context.Background(), "box")
	for task, want := range map[string]string{
		`{"id":"b","type":"run_docker_container","sandbox_name":"box","docker_context_artifact_id":"broken"}`:                                                 "build image",
		`{"id":"n","type":"run_docker_container","sandbox_name":"box","docker_context_artifact_id":"good","dockerfile_path":"nope"}`:                          "dockerfile_path: nope is not a file",
		`{"id":"r","type":"run_docker_container","sandbox_name":"box","docker_context_artifact_id":"good","container_name":"never","ready_command":"exit 1"}`: "",
		`{"id":"s","type":"run_docker_container","sandbox_name":"nobox","docker_context_artifact_id":"good"}`:                                                 `no sandbox named "nobox"`,
		`{"id":"u","type":"run_container_unit_tests_verifier","sandbox_name":"box","container_name":"ghost","command":"true"}`:                                `no task container named "ghost on sandbox box"`,
	} {
		if want == "" {
			continue // the 120 s readiness wait is not worth a test run
		}
		if err := f.run(t, rc, "["+task+"]"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", task, err, want)
		}
	}
	if err := f.run(t, rc, `[{"id":"a","type":"run_docker_container","sandbox_name":"box","docker_context_artifact_id":"good"},
	 {"id":"b","type":"run_docker_container","sandbox_name":"box","docker_context_artifact_id":"good"}]`); err == nil ||
		!strings.Contains(err.Error(), `container_name "task-container" on sandbox "box"`) {
		t.Errorf("same container twice: %v", err)
	}
	gid := ds.SandboxID + "-containers"
	if _, err := f.r.TeardownRun(context.Background(), rc, 0); err != nil {
		t.Fatal(err)
	}
	if left := f.labelled(t, gid); len(left) != 0 {
		t.Errorf("after teardown: %v", left)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
