package dockercontainer_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry/localimage"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
)

// TestInstallAgentInContainer: install_agent's container mode copies the
// scripted agent's static binary into a task container (FROM scratch, no
// shell needed), starts it on a published port, and a prompt reaches it;
// the container's removal at teardown ends it.
func TestInstallAgentInContainer(t *testing.T) {
	f := newFixture(t)
	f.image(t, "agent-box", "Dockerfile", dockerfile, minish(t))
	bin := filepath.Join(t.TempDir(), "scripted")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/agentenv/agentenv/examples/agents/scripted")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build scripted: %v\n%s", err, out)
	}
	st := envdeploy.Stores{Docs: f.svc.Documents, Artifacts: f.arts, Images: localimage.New(nil)}
	put := &envdeploy.Putter{Stores: st, TempDir: t.TempDir()}
	if _, err := put.PutAgent(context.Background(), envdeploy.AgentInput{ID: "scripted", Image: envdeploy.ImageInput{Binary: bin}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Deployer = &envdeploy.Deployer{Stores: st}
	rc := runner.NewRunContext(nil, f.svc)
	t.Cleanup(func() { _, _ = f.r.TeardownRun(context.Background(), rc, 0) })
	err := f.run(t, rc, `[
	 {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	 {"id":"up","type":"run_docker_container","sandbox_name":"box","docker_context_artifact_id":"agent-box",
	  "container_name":"work","ports":[8080,8100]},
	 {"id":"install","type":"install_agent","sandbox_name":"box","container_name":"work","a2a_agent_id":"scripted",
	  "a2a_port":8100,"workspace_dir":"/"},
	 {"id":"cfg","type":"register_agent_triggers","agent_name":"default-agent","triggers":[
	   {"id":"t","when":{"type":"step","turn":1,"cmp":"eq"},"actions":[{"type":"say","text":"hi"}]}]}]`)
	if err != nil {
		t.Fatal(err)
	}
	a, err := rc.AgentEntry("default-agent")
	if err != nil {
		t.Fatal(err)
	}
	ds, _, _ := rc.Sandbox(context.Background(), "box")
	if a["on_host"] != false || a["container_name"] != "work" || a["sandbox_id"] != ds.SandboxID ||
		!strings.HasPrefix(a["api_url"].(string), "http://127.0.0.1:") || a["a2a_card"].(map[string]any)["name"] != "scripted" {
		t.Errorf("agent entry %s", toJSON(a))
	}
	if reg, _ := rc.Metadata("agent_trigger_registrations"); !strings.Contains(toJSON(reg), `"added":["t"]`) {
		t.Errorf("the installed agent did not answer: %s", toJSON(reg))
	}
}
