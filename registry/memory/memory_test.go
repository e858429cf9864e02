package memory_test

import (
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/memory"
	"github.com/agentenv/agentenv/registry/storetest"
)

func TestConformance(t *testing.T) {
	storetest.RunDocumentStore(t, func(t *testing.T) registry.DocumentStore {
		s := memory.New()
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func BenchmarkMemory(b *testing.B) { storetest.BenchmarkDocuments(b, memory.New()) }
