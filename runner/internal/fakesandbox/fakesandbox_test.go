package fakesandbox_test

import (
	"testing"

	"github.com/agentenv/agentenv/runner/internal/fakesandbox"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandboxtest"
)

func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) sandbox.Provider {
		return fakesandbox.New("fake", t.TempDir(), 0)
	})
}
