package registry_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentenv/agentenv/registry"
)

// Concurrent first calls (here goroutines; the hard link makes it hold
// across processes too) agree on one id, and it persists.
func TestStoreID(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := registry.StoreID(root)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || len(id) != 20 {
			t.Fatalf("ids %v", ids)
		}
	}
	if again, err := registry.StoreID(root); err != nil || again != ids[0] {
		t.Errorf("second read %q %v, want %q", again, err, ids[0])
	}
	if other, err := registry.StoreID(t.TempDir()); err != nil || other == ids[0] {
		t.Errorf("another root got %q %v", other, err)
	}
	if left, _ := filepath.Glob(filepath.Join(root, ".store_id-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := os.WriteFile(filepath.Join(root, registry.StoreIDFile), []byte("../x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := registry.StoreID(root); err == nil {
		t.Error("a corrupt store_id file was accepted")
	}
}
