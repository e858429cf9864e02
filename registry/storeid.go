package registry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// StoreIDFile is the file in a state root that holds the store's id.
const StoreIDFile = "store_id"

// StoreID returns the persistent id of the store whose state root is root
// (20 characters [a-z0-9]), creating it on first use. Sandboxes carry it
// as a label so that `sandbox prune` in one store never touches another
// store's deploys on a shared engine.
//
// Creation is atomic: the id is written to a temporary file that is then
// hard-linked into place, which fails if another process won the race;
// both then read the winner's id, so concurrent first calls agree and no
// reader ever sees a partial file.
func StoreID(root string) (string, error) {
	path := filepath.Join(root, StoreIDFile)
	if id, err := readStoreID(path); !errors.Is(err, os.ErrNotExist) {
		return id, err
	}
	if err := EnsureStateDir(root, root); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(root, ".store_id-*")
	if err != nil {
		return "", fmt.Errorf("store id: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(RandomSuffix(20) + "\n")
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", fmt.Errorf("store id: %w", werr)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("store id: %w", err)
	}
	return readStoreID(path)
}

func readStoreID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if id == "" || len(id) > 64 || strings.Trim(id, idAlphabet) != "" {
		return "", fmt.Errorf("store id: %s holds %q, not an id of [a-z0-9] (remove the file to get a new id)", path, id)
	}
	return id, nil
}
