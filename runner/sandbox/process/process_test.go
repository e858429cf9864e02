package process_test

import (
	"os"
	"testing"

	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox/process"
)

func TestMain(m *testing.M) {
	code := m.Run()
	envdeploytest.Cleanup()
	os.Exit(code)
}

func TestConformance(t *testing.T) {
	p := process.New(t.TempDir(), nil)
	envdeploytest.Run(t, func(t *testing.T) envdeploy.Backend { return p }, &envdeploytest.Options{
		Leftovers: func(t *testing.T) []string { return p.Groups() },
	})
}
