package hygiene

import (
	"go/ast"
	"testing"
)

// unwrapAllowed lists "dir.Type" ResponseWriter wrappers that may lack
// Unwrap, with the reason.
var unwrapAllowed = map[string]string{}

// TestResponseWriterWrappersUnwrap fails on a struct that embeds
// http.ResponseWriter without an Unwrap method: http.NewResponseController
// finds Flush, hijacking and deadlines through Unwrap, so a wrapper without
// it silently breaks SSE streaming behind it.
func TestResponseWriterWrappersUnwrap(t *testing.T) {
	dirs := parseModule(t, moduleRoot(t))
	for _, dir := range sortedKeys(dirs) {
		for _, typ := range wrappersWithoutUnwrap(dirs[dir]) {
			key := dir + "." + typ
			if _, ok := unwrapAllowed[key]; ok {
				continue
			}
			t.Errorf("%s embeds http.ResponseWriter but has no Unwrap() http.ResponseWriter method", key)
		}
	}
}

// wrappersWithoutUnwrap returns the struct types of one package directory
// (test files included) that wrap an http.ResponseWriter (embed one, or
// hold one and implement Header, Write and WriteHeader) and declare no
// Unwrap method.
func wrappersWithoutUnwrap(files []goFile) []string {
	embeds := map[string]bool{} // embeds a ResponseWriter
	holds := map[string]bool{}  // has a named ResponseWriter field
	methods := map[string]map[string]bool{}
	for _, f := range files {
		httpName := importName(f.ast, "net/http")
		for _, decl := range f.ast.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv != nil {
				name := declName(fd)
				typ := name[:len(name)-len("."+fd.Name.Name)]
				if methods[typ] == nil {
					methods[typ] = map[string]bool{}
				}
				methods[typ][fd.Name.Name] = true
			}
		}
		if httpName == "" {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				typ := field.Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				if !isSelector(typ, httpName, "ResponseWriter") {
					continue
				}
				if len(field.Names) == 0 {
					embeds[ts.Name.Name] = true
				} else {
					holds[ts.Name.Name] = true
				}
			}
			return true
		})
	}
	// A type holding a ResponseWriter in a named field wraps it when it
	// is one itself: it has the interface's methods.
	for name := range holds {
		m := methods[name]
		if m["Header"] && m["Write"] && m["WriteHeader"] {
			embeds[name] = true
		}
	}
	var out []string
	for _, name := range sortedKeys(embeds) {
		if !methods[name]["Unwrap"] {
			out = append(out, name)
		}
	}
	return out
}
