package hygiene

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink matches a Markdown link target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsStayInsideTheRepository fails when a doc names a path outside
// the repository: users have only the repository, so every doc must stand
// on its own (a relative link that climbs out of it, an absolute path of
// the machine it was written on, or the project's internal spec folder).
func TestDocsStayInsideTheRepository(t *testing.T) {
	root := moduleRoot(t)
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append(docs, filepath.Join(root, "README.md"))
	for _, f := range docs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, p := range outsidePaths(string(b), filepath.Dir(f), root) {
			t.Errorf("%s points outside the repository: %s", rel, p)
		}
	}
}

// outsidePaths lists what text (a doc in dir) names outside root.
func outsidePaths(text, dir, root string) []string {
	var out []string
	for _, bad := range []string{"shared/spec", "/work/"} {
		if strings.Contains(text, bad) {
			out = append(out, bad)
		}
	}
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		target, _, _ = strings.Cut(target, "#")
		var abs string
		if filepath.IsAbs(target) {
			abs = target
		} else {
			abs = filepath.Join(dir, target)
		}
		if r, err := filepath.Rel(root, abs); err != nil || r == ".." || strings.HasPrefix(r, "../") {
			out = append(out, m[1])
		}
	}
	return out
}

func TestOutsidePathsFindsThem(t *testing.T) {
	root := "/repo"
	text := "See [spec](../../shared/spec/gateway.md), [ok](runner.md#dag), [web](https://example.com), and /work/shared/x."
	got := outsidePaths(text, "/repo/docs", root)
	want := []string{"shared/spec", "/work/", "../../shared/spec/gateway.md"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("outsidePaths = %q, want %q", got, want)
	}
}
