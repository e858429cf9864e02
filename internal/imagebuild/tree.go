package imagebuild

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
)

// AddTree maps every file under the host folder dir to the same path in
// files (for Image.Files), skipping folders skipDir says yes to (nil
// skips none). A symbolic link to a file is kept (Scratch copies the file
// it points to); a link to a folder, or a dangling one, is left out: the
// folder it points to is either walked anyway (zoneinfo's posix -> .) or
// not wanted.
func AddTree(files map[string]string, dir string, skipDir func(string) bool) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDir != nil && skipDir(p) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if st, err := os.Stat(p); err != nil || st.IsDir() {
				return nil
			}
		}
		files[p] = p
		return nil
	})
}

// AddClosure adds the shared-library closure of the programs and
// libraries elf (LibraryClosure) to files, each at its host path.
func AddClosure(ctx context.Context, files map[string]string, elf []string) error {
	libs, err := LibraryClosure(ctx, elf)
	if err != nil {
		return err
	}
	for _, l := range libs {
		files[l] = l
	}
	return nil
}
