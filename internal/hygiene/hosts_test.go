package hygiene

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// registryHosts are package registries' host names. The machines this
// project builds on configure the module proxy (and Debian's mirrors) in
// their own environment; a script or doc that names a host overrides that
// configuration, so the repository names none.
var registryHosts = []string{
	"proxy." + "golang.org",
	"sum." + "golang.org",
	"deb." + "debian.org",
	"pypi." + "org",
	"registry." + "npmjs.org",
	"registry-1." + "docker.io",
}

// TestNoRegistryHostNamed fails when a tracked file names a package
// registry's host.
func TestNoRegistryHostNamed(t *testing.T) {
	root := moduleRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to scan", err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if rel == "" || strings.HasSuffix(rel, "go.sum") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			continue // removed in the work tree but not yet in the index
		}
		if hit := namedRegistryHost(data); hit != "" {
			t.Errorf("%s names the package registry host %q; leave registries to the machine's environment", rel, hit)
		}
	}
}

// namedRegistryHost returns the first registry host data names, or "".
func namedRegistryHost(data []byte) string {
	for _, h := range registryHosts {
		if bytes.Contains(data, []byte(h)) {
			return h
		}
	}
	return ""
}

func TestNamedRegistryHostFindsHosts(t *testing.T) {
	if got := namedRegistryHost([]byte("export GOPROXY=https://" + registryHosts[0] + ",direct")); got != registryHosts[0] {
		t.Errorf("GOPROXY line: got %q, want %q", got, registryHosts[0])
	}
	if got := namedRegistryHost([]byte("GOFLAGS=-mod=mod go test ./...")); got != "" {
		t.Errorf("clean line: got %q, want none", got)
	}
}
