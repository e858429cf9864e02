package pgserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentenv/agentenv/internal/imagebuild"
)

// ImageFiles lists what a FROM scratch image needs to run PostgreSQL from
// this host's binaries in binDir (/usr/lib/postgresql/<v>/bin): the
// version's bin and lib folders (without the LLVM bitcode), its share
// folder, the time zone database, /bin/sh (initdb runs postgres through
// popen), the shared-library closure of every program and module, and
// /etc/passwd and /etc/group holding the
// postgres user (written into tmp). It maps image paths to host paths,
// for imagebuild.Image.Files.
func ImageFiles(ctx context.Context, binDir, tmp string) (map[string]string, error) {
	u, _, _, err := runAsLookup()
	if err != nil {
		return nil, err
	}
	root := filepath.Dir(binDir) // /usr/lib/postgresql/<v>
	version := filepath.Base(root)
	files := map[string]string{}
	bitcode := filepath.Join(root, "lib", "bitcode")
	for _, dir := range []string{binDir, filepath.Join(root, "lib"), "/usr/share/postgresql/" + version, "/usr/share/zoneinfo"} {
		if err := imagebuild.AddTree(files, dir, func(p string) bool { return p == bitcode }); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("pgserver: image files: %w", err)
		}
	}
	var elf []string
	for p := range files {
		if strings.HasPrefix(p, binDir) || (strings.HasPrefix(p, root) && strings.HasSuffix(p, ".so")) {
			elf = append(elf, p)
		}
	}
	// initdb runs postgres through popen, which needs /bin/sh.
	if sh, err := filepath.EvalSymlinks("/bin/sh"); err == nil {
		files["/bin/sh"] = sh
		elf = append(elf, sh)
	}
	if err := imagebuild.AddClosure(ctx, files, elf); err != nil {
		return nil, err
	}
	passwd := filepath.Join(tmp, "passwd")
	group := filepath.Join(tmp, "group")
	if err := os.WriteFile(passwd, []byte("root:x:0:0:root:/:/nonexistent\npostgres:x:"+u.Uid+":"+u.Gid+":PostgreSQL:/var/lib/postgresql:/nonexistent\n"), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(group, []byte("root:x:0:\npostgres:x:"+u.Gid+":\n"), 0o644); err != nil {
		return nil, err
	}
	files["/etc/passwd"], files["/etc/group"] = passwd, group
	return files, nil
}
