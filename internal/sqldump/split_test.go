package sqldump

import "testing"

func TestSplitDumpLinesQuotesAndCopy(t *testing.T) {
	dump := "-- c\n\\connect db\nSELECT ';'; SELECT $x$ ; $x$;\nCOPY t (a) FROM stdin;\n1\n2\n\\.\n/* a\n b */ SELECT E'\\';'\n, 1;\nSELECT 3"
	got := splitDump(dump)
	want := []struct {
		sql  string
		line int
		copy string
	}{
		{"SELECT ';'", 3, ""}, {"SELECT $x$ ; $x$", 3, ""}, {"COPY t (a) FROM stdin", 4, "1\n2\n"},
		{"/* a\n b */ SELECT E'\\';'\n, 1", 8, ""}, {"SELECT 3", 11, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d statements: %+v", len(got), got)
	}
	for i, w := range want {
		g := got[i]
		c := ""
		if g.copyData != nil {
			c = *g.copyData
		}
		if g.sql != w.sql || g.line != w.line || c != w.copy {
			t.Errorf("statement %d = %q line %d copy %q, want %q line %d copy %q", i, g.sql, g.line, c, w.sql, w.line, w.copy)
		}
	}
}
