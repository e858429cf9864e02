package hygiene

import (
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/agentenv/agentenv"

// importRule constrains the imports of the non-test files under one
// directory tree.
type importRule struct {
	tree string
	why  string
	// allowed reports whether path may be imported from tree.
	allowed func(path string) bool
}

// isStdlib reports whether an import path belongs to the standard library:
// like the go tool, a path whose first element has no dot.
func isStdlib(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// within reports whether path is pkg or below it.
func within(path, pkg string) bool {
	return path == pkg || strings.HasPrefix(path, pkg+"/")
}

var importRules = []importRule{
	{
		tree:    "protocol",
		why:     "protocol holds only wire types and imports only the standard library",
		allowed: isStdlib,
	},
	{
		tree: "envsdk",
		why:  "envsdk is for environment authors: it may use protocol and third-party modules, no other package of ours",
		allowed: func(p string) bool {
			return !within(p, module) || within(p, module+"/protocol") || within(p, module+"/envsdk")
		},
	},
	{
		tree: "agentsdk",
		why:  "agentsdk is for agent authors: it may use protocol and third-party modules, no other package of ours",
		allowed: func(p string) bool {
			return !within(p, module) || within(p, module+"/protocol") || within(p, module+"/agentsdk")
		},
	},
}

// importAllowed lists "file:import" pairs exempt from importRules, with
// the reason.
var importAllowed = map[string]string{}

// TestLayering enforces importRules over non-test files (tests may use any
// package: an SDK's tests can start a real gateway).
func TestLayering(t *testing.T) {
	dirs := parseModule(t, moduleRoot(t))
	for _, r := range importRules {
		for _, dir := range sortedKeys(dirs) {
			if !within(dir, r.tree) {
				continue
			}
			for _, f := range dirs[dir] {
				if f.test {
					continue
				}
				for _, imp := range f.ast.Imports {
					p, err := strconv.Unquote(imp.Path.Value)
					if err != nil || r.allowed(p) {
						continue
					}
					if _, ok := importAllowed[f.rel+":"+p]; ok {
						continue
					}
					t.Errorf("%s imports %s: %s", f.rel, p, r.why)
				}
			}
		}
	}
}
