package hygiene

import (
	"go/parser"
	"go/token"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func parseSource(t *testing.T, rel, src string) goFile {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	return goFile{rel: rel, ast: f, fset: fset, test: true}
}

// The checks are only worth something if they catch what they claim to:
// these cases pin each one against a small source file.
func TestSleepsOutsideBubblesFindsWallClockSleeps(t *testing.T) {
	src := `package p

import (
	"testing"
	"testing/synctest"
	clock "time"
)

func TestInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { clock.Sleep(clock.Hour) })
}

func TestOutside(t *testing.T) {
	clock.Sleep(clock.Millisecond)
	synctest.Test(t, func(t *testing.T) {})
}

type waiter struct{}

func (*waiter) wait() { f := clock.Sleep; f(1) }

func poll() {
	<-clock.After(clock.Millisecond)
	select {
	case <-clock.After(clock.Second): // a timeout beside other cases is fine
	}
}
`
	got := sleepsOutsideBubbles(parseSource(t, "p/p_test.go", src))
	want := []sleepFinding{
		{key: "p/p_test.go:TestOutside", line: 14},
		{key: "p/p_test.go:waiter.wait", line: 20},
		{key: "p/p_test.go:poll", line: 23},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(sleepFinding{})); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

func TestSleepsOutsideBubblesIgnoresFilesWithoutTime(t *testing.T) {
	src := "package p\n\ntype time struct{}\n\nfunc (time) Sleep() {}\n\nfunc f() { var t time; t.Sleep() }\n"
	if got := sleepsOutsideBubbles(parseSource(t, "p/p_test.go", src)); len(got) != 0 {
		t.Errorf("found %v in a file that does not import time", got)
	}
}

func TestHasPackageDoc(t *testing.T) {
	documented := parseSource(t, "p/p.go", "// Package p does a thing.\npackage p\n")
	documented.test = false
	bare := parseSource(t, "p/p.go", "package p\n\n// F is documented, the package is not.\nfunc F() {}\n")
	bare.test = false
	docGo := parseSource(t, "p/doc.go", "package p\n")
	docGo.test = false
	testDoc := parseSource(t, "p/p_test.go", "// Package p_test documents only the tests.\npackage p_test\n")
	for _, tc := range []struct {
		name  string
		files []goFile
		want  bool
	}{
		{"package comment", []goFile{bare, documented}, true},
		{"doc.go", []goFile{bare, docGo}, true},
		{"undocumented", []goFile{bare}, false},
		{"test comment beside code", []goFile{bare, testDoc}, false},
		{"test-only package", []goFile{testDoc}, true},
	} {
		if got := hasPackageDoc(tc.files); got != tc.want {
			t.Errorf("%s: hasPackageDoc = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestImportRules(t *testing.T) {
	rule := func(tree string) importRule {
		for _, r := range importRules {
			if r.tree == tree {
				return r
			}
		}
		t.Fatalf("no rule for %s", tree)
		return importRule{}
	}
	for _, tc := range []struct {
		tree, path string
		want       bool
	}{
		{"protocol", "encoding/json", true},
		{"protocol", "github.com/google/jsonschema-go/jsonschema", false},
		{"protocol", module + "/registry", false},
		{"envsdk", module + "/protocol", true},
		{"envsdk", module + "/envsdk/envclient", true},
		{"envsdk", "github.com/mark3labs/mcp-go/server", true},
		{"envsdk", module + "/internal/config", false},
		{"envsdk", module + "/agentsdk", false},
		{"agentsdk", module + "/gateway", false},
		{"agentsdk", module + "/agentsdk/llm", true},
		{"agentsdk", module + "/agentsdkx", false}, // a prefix is not a subtree
	} {
		if got := rule(tc.tree).allowed(tc.path); got != tc.want {
			t.Errorf("%s importing %s: allowed = %v, want %v", tc.tree, tc.path, got, tc.want)
		}
	}
}

func TestGrabBags(t *testing.T) {
	got := grabBags([]string{"internal/util", "registry/redact", "common", "gateway/triggers", "x/helpers"})
	if diff := cmp.Diff([]string{"internal/util", "common", "x/helpers"}, got); diff != "" {
		t.Errorf("grabBags (-want +got):\n%s", diff)
	}
}

func TestWrappersWithoutUnwrap(t *testing.T) {
	src := `package p

import "net/http"

type good struct{ http.ResponseWriter }

func (g *good) Unwrap() http.ResponseWriter { return g.ResponseWriter }

type bad struct {
	http.ResponseWriter
	status int
}

type named struct{ w http.ResponseWriter } // holds one, does not wrap

type held struct{ w http.ResponseWriter } // holds one and is one

func (h held) Header() http.Header         { return h.w.Header() }
func (h held) Write(b []byte) (int, error) { return h.w.Write(b) }
func (h held) WriteHeader(code int)        { h.w.WriteHeader(code) }

func (b *bad) WriteHeader(code int) { b.status = code; b.ResponseWriter.WriteHeader(code) }
`
	got := wrappersWithoutUnwrap([]goFile{parseSource(t, "p/p.go", src)})
	if diff := cmp.Diff([]string{"bad", "held"}, got); diff != "" {
		t.Errorf("wrappers (-want +got):\n%s", diff)
	}
}
