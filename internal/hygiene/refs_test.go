package hygiene

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// refScanned are the tracked files whose text users read: docs, Go source
// (comments and messages), conformance cases, scripts and bundles.
var refScanned = []string{".md", ".go", ".txtar", ".sh", ".toml", ".py"}

// refAllowed lists files that may name what the rules forbid, with why.
var refAllowed = map[string]string{
	"internal/hygiene/refs_test.go": "holds the rules and their examples",
	"internal/hygiene/docs_test.go": "holds the outside-path examples",
}

// mdConventions are Markdown file names that name a convention, not a
// document of the repository.
var mdConventions = map[string]bool{
	"SKILL.md": true, // the file an agent skill is written in
}

// TestNoReferenceOutsideTheRepository fails when a tracked file a user
// reads points at a document they do not have: a section sign that is not
// part of an RFC citation ("§7.1", "runner.md §3": the sections of the
// project's private spec), a path of the machine it was written on, or a
// Markdown file name that exists nowhere in the repository. The wire
// contract users need is in docs/protocol.md; point there, by heading.
func TestNoReferenceOutsideTheRepository(t *testing.T) {
	root := moduleRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to scan", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	tracked := map[string]bool{}
	for _, f := range files {
		tracked[f] = true
	}
	for _, rel := range files {
		if _, ok := refAllowed[rel]; ok || !scanned(rel) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			continue // removed in the work tree but not yet in the index
		}
		exists := func(p string) bool {
			for _, base := range []string{path.Dir(rel), "docs", "."} {
				if _, err := os.Stat(filepath.Join(root, base, p)); err == nil {
					return true
				}
			}
			// A path inside an embedded tree (a bundle's README.md).
			return tracked[p] || trackedSuffix(tracked, "/"+path.Clean(p))
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, bad := range outsideRefs(line, exists) {
				t.Errorf("%s:%d points outside the repository: %s", rel, i+1, bad)
			}
		}
	}
}

// trackedSuffix reports whether a tracked file's path ends with suffix.
func trackedSuffix(tracked map[string]bool, suffix string) bool {
	for f := range tracked {
		if strings.HasSuffix(f, suffix) {
			return true
		}
	}
	return false
}

func scanned(rel string) bool {
	for _, ext := range refScanned {
		if strings.HasSuffix(rel, ext) {
			return true
		}
	}
	return false
}

var (
	// sectionRef is a section sign with what follows it; rfcSection is
	// the one allowed form, a citation of a published RFC.
	sectionRef = regexp.MustCompile(`§+\s*[\d.…–-]*`)
	rfcSection = regexp.MustCompile(`RFC ?\d+,? ?$`)
	// mdName is a Markdown file name, with the path written before it.
	mdName = regexp.MustCompile(`[\w./-]*\b[\w-]+\.md\b`)
)

// outsideRefs lists what one line names outside the repository; exists
// says whether a Markdown path is in it.
func outsideRefs(line string, exists func(string) bool) []string {
	var out []string
	for _, loc := range sectionRef.FindAllStringIndex(line, -1) {
		if !rfcSection.MatchString(line[:loc[0]]) {
			out = append(out, strings.TrimSpace(line[loc[0]:loc[1]]))
		}
	}
	for _, bad := range []string{"shared/" + "spec", "/work" + "/"} {
		if strings.Contains(line, bad) {
			out = append(out, bad)
		}
	}
	for _, m := range mdName.FindAllString(line, -1) {
		if strings.Contains(m, "://") || strings.HasPrefix(m, "/") {
			continue // a URL, or an absolute path the docs test reports
		}
		if !exists(m) && !mdConventions[path.Base(m)] {
			out = append(out, m)
		}
	}
	return out
}

func TestOutsideRefsFindsThem(t *testing.T) {
	have := map[string]bool{"docs/protocol.md": true, "protocol.md": true, "README.md": true}
	exists := func(p string) bool { return have[p] }
	for line, want := range map[string]string{
		"// serveStep is POST /step (gateway.md §7.1).":       "§7.1|gateway.md",
		"// the retry rule of §3":                             "§3",
		"// see env-protocol.md for the card":                 "env-protocol.md",
		"// reusing the connection (RFC 9112 §6.3)":           "",
		"// the " + "/work" + "/shared/x file":                "/work/",
		"// the wire contract (docs/protocol.md, \"Errors\")": "",
		"see README.md and protocol.md":                       "",
	} {
		if got := strings.Join(outsideRefs(line, exists), "|"); got != want {
			t.Errorf("outsideRefs(%q) = %q, want %q", line, got, want)
		}
	}
}
