package agentsdk_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// agentsdk (and its subpackages) depend on no package of this module but
// protocol, so an agent binary pulls in nothing else of ours.
func TestImportsOnlyProtocolOfThisModule(t *testing.T) {
	const mod = "github.com/agentenv/agentenv/"
	allowed := map[string]bool{mod + "protocol": true, mod + "agentsdk": true, mod + "agentsdk/llm": true, mod + "agentsdk/agentsdktest": true}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, mod) && !allowed[p] {
				t.Errorf("%s imports %s", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
