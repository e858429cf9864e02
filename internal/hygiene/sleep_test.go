package hygiene

import (
	"fmt"
	"go/ast"
	"go/token"
	"testing"
)

// sleepAllowed lists the test functions that may call time.Sleep against
// the real clock, keyed "file:Func" (Func is the enclosing top-level
// function, Type.Method for methods). Each value says why. Entries for
// other areas' debts carry a TODO naming the owner; they are here so CI
// stays green while the owners fix them.
var sleepAllowed = map[string]string{
	// TODO(gateway): the sleep is the poll interval of a deadline-bounded
	// wait for the kernel to report a peer-closed socket, which has no
	// event to wait on; if the raw client gains a hook that reports a dead
	// pooled connection, wait on that and drop this entry.
	"gateway/rawclient_test.go:TestRawClientReusesAndSurvivesClosedConnections": "polls a kernel socket state with a deadline (owner: gateway)",
	"gateway/triggers/helpers_test.go:waitFor":                                  "the poll interval of a condition wait with a deadline, for the one test that drives triggers with the real clock over HTTP (TestWiredOverHTTP); every other trigger test runs in a synctest bubble",
}

// sleepFinding is one time.Sleep outside a synctest bubble.
type sleepFinding struct {
	key  string // file:Func
	line int
}

// TestNoSleepOutsideSynctest fails when a _test.go file calls (or takes
// the value of) time.Sleep, or blocks on a bare <-time.After(d), outside the function literal passed to
// synctest.Test or synctest.Run. Inside a bubble Sleep advances a fake
// clock, which is deterministic; outside it, it waits on wall time, which
// makes a test flaky under load or slow for nothing.
func TestNoSleepOutsideSynctest(t *testing.T) {
	dirs := parseModule(t, moduleRoot(t))
	used := map[string]bool{}
	for _, dir := range sortedKeys(dirs) {
		for _, f := range dirs[dir] {
			if !f.test {
				continue
			}
			for _, s := range sleepsOutsideBubbles(f) {
				if _, ok := sleepAllowed[s.key]; ok {
					used[s.key] = true
					continue
				}
				t.Errorf("%s:%d: time.Sleep or a bare <-time.After in a test outside a synctest bubble (in %s); wait on a channel or condition, or run the test in synctest.Test",
					f.rel, s.line, s.key)
			}
		}
	}
	for _, k := range sortedKeys(sleepAllowed) {
		if !used[k] {
			t.Logf("allow-list entry %q matches no time.Sleep any more; remove it", k)
		}
	}
}

// sleepsOutsideBubbles finds the time.Sleep selectors of f that are not
// inside a function literal handed to synctest.Test/Run.
func sleepsOutsideBubbles(f goFile) []sleepFinding {
	timeName := importName(f.ast, "time")
	if timeName == "" {
		return nil
	}
	syncName := importName(f.ast, "testing/synctest")
	var bubbles [][2]token.Pos
	if syncName != "" {
		ast.Inspect(f.ast, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isSelector(call.Fun, syncName, "Test", "Run") {
				return true
			}
			for _, arg := range call.Args {
				if lit, ok := arg.(*ast.FuncLit); ok {
					bubbles = append(bubbles, [2]token.Pos{lit.Pos(), lit.End()})
				}
			}
			return true
		})
	}
	inBubble := func(p token.Pos) bool {
		for _, b := range bubbles {
			if p >= b[0] && p < b[1] {
				return true
			}
		}
		return false
	}
	// "case <-time.After(d):" in a select is a timeout, not a sleep; its
	// Comm is an ExprStmt of the same shape as a bare receive.
	comms := map[ast.Stmt]bool{}
	ast.Inspect(f.ast, func(n ast.Node) bool {
		if cc, ok := n.(*ast.CommClause); ok && cc.Comm != nil {
			comms[cc.Comm] = true
		}
		return true
	})
	var out []sleepFinding
	for _, decl := range f.ast.Decls {
		name := declName(decl)
		ast.Inspect(decl, func(n ast.Node) bool {
			if n == nil || inBubble(n.Pos()) {
				return true
			}
			if isSelector(n, timeName, "Sleep") || (isBareAfter(n, timeName) && !comms[n.(ast.Stmt)]) {
				out = append(out, sleepFinding{key: f.rel + ":" + name, line: f.fset.Position(n.Pos()).Line})
			}
			return true
		})
	}
	return out
}

// isBareAfter reports whether n is the statement <-time.After(d): a
// time.Sleep by another name.
func isBareAfter(n ast.Node, timeName string) bool {
	stmt, ok := n.(*ast.ExprStmt)
	if !ok {
		return false
	}
	recv, ok := stmt.X.(*ast.UnaryExpr)
	if !ok || recv.Op != token.ARROW {
		return false
	}
	call, ok := recv.X.(*ast.CallExpr)
	return ok && isSelector(call.Fun, timeName, "After")
}

// isSelector reports whether n is pkg.Name for one of names.
func isSelector(n ast.Node, pkg string, names ...string) bool {
	sel, ok := n.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok || id.Name != pkg {
		return false
	}
	for _, name := range names {
		if sel.Sel.Name == name {
			return true
		}
	}
	return false
}

// declName names a top-level declaration for allow-list keys.
func declName(d ast.Decl) string {
	fd, ok := d.(*ast.FuncDecl)
	if !ok {
		return "(package level)"
	}
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok {
		typ = idx.X
	}
	if idx, ok := typ.(*ast.IndexListExpr); ok {
		typ = idx.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fmt.Sprintf("%T.%s", typ, fd.Name.Name)
}
