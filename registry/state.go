package registry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// StateRoot returns the local state root:
// $XDG_STATE_HOME/agent-env if XDG_STATE_HOME is absolute, else
// ~/.local/state/agent-env. It does not create it.
func StateRoot() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "agent-env"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("state root: no XDG_STATE_HOME and no home directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "agent-env"), nil
}

// EnsureStateDir creates dir (and its parents) with mode 0700 if missing,
// and, when root is an ancestor created here, drops a .gitignore of "*" in
// root so a state root inside a repository is never committed.
func EnsureStateDir(root, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state directory %s: %w", dir, err)
	}
	gi := filepath.Join(root, ".gitignore")
	if _, err := os.Stat(gi); errors.Is(err, os.ErrNotExist) {
		_ = os.WriteFile(gi, []byte("*\n"), 0o600)
	}
	return nil
}
