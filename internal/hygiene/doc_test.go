package hygiene

import (
	"strings"
	"testing"
)

// docAllowed lists package directories that may lack a package comment,
// with the reason.
var docAllowed = map[string]string{}

// TestEveryPackageHasADocComment fails when a directory of Go files has
// neither a doc.go nor a package comment on any of its files. The comment
// is where a package says why it exists; go doc shows it.
func TestEveryPackageHasADocComment(t *testing.T) {
	dirs := parseModule(t, moduleRoot(t))
	for _, dir := range sortedKeys(dirs) {
		if hasPackageDoc(dirs[dir]) {
			continue
		}
		if _, ok := docAllowed[dir]; ok {
			continue
		}
		t.Errorf("%s: no doc.go and no package comment; add a doc.go saying what the package is for", dir)
	}
	for _, dir := range sortedKeys(docAllowed) {
		if files, ok := dirs[dir]; !ok || hasPackageDoc(files) {
			t.Logf("allow-list entry %q is no longer needed; remove it", dir)
		}
	}
}

// hasPackageDoc reports whether the files of one directory document their
// package: a doc.go, or a comment on a package clause. Test files count
// only in a directory that has no other files (a test-only package), since
// go doc never shows an _test.go comment for a package with code.
func hasPackageDoc(files []goFile) bool {
	onlyTests := true
	for _, f := range files {
		if !f.test {
			onlyTests = false
		}
	}
	for _, f := range files {
		if f.test && !onlyTests {
			continue
		}
		if strings.HasSuffix(f.rel, "/doc.go") || f.rel == "doc.go" {
			return true
		}
		if f.ast.Doc != nil && strings.TrimSpace(f.ast.Doc.Text()) != "" {
			return true
		}
	}
	return false
}

// grabBagNames are package names that say nothing about what a package
// provides (the style guide's util/common/helpers anti-pattern).
var grabBagNames = map[string]bool{"util": true, "utils": true, "common": true, "helpers": true, "helper": true, "misc": true, "shared": true}

// TestNoGrabBagPackages fails on a package directory named like a grab
// bag: a package is named for what it provides.
func TestNoGrabBagPackages(t *testing.T) {
	for _, dir := range grabBags(sortedKeys(parseModule(t, moduleRoot(t)))) {
		t.Errorf("%s: a package named for no concern; name it for what it provides", dir)
	}
}

// grabBags returns the dirs whose last element is a grab-bag name.
func grabBags(dirs []string) []string {
	var out []string
	for _, dir := range dirs {
		if grabBagNames[dir[strings.LastIndex(dir, "/")+1:]] {
			out = append(out, dir)
		}
	}
	return out
}
