package registry_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/agentenv/agentenv/registry"
)

// The first users of a state root race to create its store id: one id
// wins, everyone gets it, and it never changes.
func TestStoreIDCreatedOnceAndKept(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	const n = 32
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = registry.StoreID(root)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("caller %d: %q, %v (caller 0: %q)", i, ids[i], errs[i], ids[0])
		}
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(ids[0]) {
		t.Fatalf("store id %q", ids[0])
	}
	if again, err := registry.StoreID(root); err != nil || again != ids[0] {
		t.Fatalf("second look: %q, %v", again, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(root, ".store-id-*")); len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
	if other, _ := registry.StoreID(t.TempDir()); other == ids[0] {
		t.Fatal("two state roots share a store id")
	}
	// A damaged file is refused by name, never replaced.
	p := filepath.Join(root, registry.StoreIDFile)
	if err := os.WriteFile(p, []byte("not an id\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := registry.StoreID(root); !errors.Is(err, registry.ErrInvalid) || !regexp.MustCompile(regexp.QuoteMeta(p)).MatchString(err.Error()) {
		t.Fatalf("malformed store id file: %v", err)
	}
}
