package main

import (
	"runtime/debug"
	"strings"
)

// versionString is what `agent-env --version` prints after "agent-env
// version ": the -ldflags version when set, else the module version of a
// `go install`ed binary, else "dev" plus the VCS revision the binary was
// built from (so a bug report names the commit).
func versionString() string {
	if version != "dev" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev == "" {
		return version
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return strings.Join([]string{version, " (", rev, modified, ")"}, "")
}
