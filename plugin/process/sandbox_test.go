package process

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandboxtest"
)

// buildExample builds a program of examples/plugins into a temporary
// folder and returns its path.
func buildExample(t *testing.T, pkg, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds an example plugin")
	}
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", out, "github.com/agentenv/agentenv/examples/plugins/"+pkg)
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// The hostdir example plugin's provider passes the sandbox conformance
// suite through the protocol; every plugin process ends with its Set.
func TestSandboxProviderConformance(t *testing.T) {
	bin := buildExample(t, "hostdir", "agentenv-plugin-hostdir")
	sandboxtest.Run(t, func(t *testing.T) sandbox.Provider {
		set := Load(context.Background(), []Spec{{Name: "hostdir", Command: []string{bin}}}, nil)
		t.Cleanup(func() { checkClosed(t, set) })
		if errs := set.Errs(); len(errs) > 0 {
			t.Fatalf("Load: %v", errs)
		}
		for _, sp := range register(t, set, runner.NewStepRegistry()).Sandboxes() {
			if sp.Name == "hostdir" {
				p, err := sp.New(context.Background(), &plugin.ProviderEnv{})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
		}
		t.Fatal("the registry has no hostdir sandbox provider")
		return nil
	})
}
