package main

import (
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
)

// An @local, upper-case agent id is put, not refused: its image artifact
// is an @local id and its image name a valid mapping of it; get prints
// the stored document in the reference's names.
func TestA2AAgentPutNamespacedID(t *testing.T) {
	bins := envdeploytest.Build(t)
	c := newCLI(t)
	code, out, stderr := c.run("a2a-agent", "put", "--id", "@local/team/Helper", "--binary", bins.Agent, "--default-model", "m1")
	if code != 0 || !strings.Contains(out, "Created A2A agent: id=@local/team/Helper version=1 image=@local/a2a-agent-team/Helper:1") {
		t.Fatalf("put: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = c.run("a2a-agent", "get", "--id", "@local/team/Helper")
	for _, want := range []string{`"docker_image_artifact": {`, `"id": "@local/a2a-agent-team/Helper"`, `"type": "docker_image"`,
		`"default_model": "m1"`, `"image_name": "localhost:5000/`, `local/a2a-agent-team/helper-`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("get: exit %d, lacks %q\n%s\n%s", code, want, out, stderr)
		}
	}
}
