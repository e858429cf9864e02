package imagebuild

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// LibraryClosure lists the shared libraries the dynamically linked
// programs or libraries paths load, the dynamic loader included, as
// absolute host paths (the paths the loader looks them up by, so an
// image holding each file at the same path runs the programs). It asks
// ldd, which resolves the whole closure. Statically linked files add
// nothing.
func LibraryClosure(ctx context.Context, paths []string) ([]string, error) {
	seen := map[string]bool{}
	for _, p := range paths {
		out, err := exec.CommandContext(ctx, "ldd", p).Output()
		if err != nil {
			if bytes.Contains(out, []byte("not a dynamic executable")) {
				continue
			}
			if ee, ok := err.(*exec.ExitError); ok && bytes.Contains(ee.Stderr, []byte("not a dynamic executable")) {
				continue
			}
			return nil, fmt.Errorf("imagebuild: ldd %s: %w", p, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if strings.Contains(line, "=> not found") {
				return nil, fmt.Errorf("imagebuild: %s needs a library that is not installed: %s", p, line)
			}
			// "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" or
			// "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
			if _, after, ok := strings.Cut(line, "=> "); ok {
				line = after
			}
			f := strings.Fields(line)
			if len(f) > 0 && filepath.IsAbs(f[0]) {
				seen[f[0]] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}
