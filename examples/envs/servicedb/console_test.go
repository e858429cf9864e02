package servicedb_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/examples/envs/servicedb"
)

func getPage(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestConsole: the web console lists the tables with their row counts,
// pages a table's rows in key order, runs a read-only query, refuses
// writes and bad parameters with the parameter's name, and escapes what
// the database holds.
func TestConsole(t *testing.T) {
	env, c, pool := start(t)
	ctx := context.Background()
	if err := c.AddData(ctx, sqlPart(seed)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE "odd name" (k int PRIMARY KEY, v text);
		INSERT INTO "odd name" SELECT g, '<b>v' || g || '</b>' FROM generate_series(1, 120) g`); err != nil {
		t.Fatal(err)
	}
	base := env.BaseURL + servicedb.ConsolePath

	code, body := getPage(t, base)
	if code != 200 || !strings.Contains(body, `href="table?name=customers"`) || !strings.Contains(body, `<td>2</td>`) ||
		!strings.Contains(body, `href="table?name=odd%20name"`) || !strings.Contains(body, `<td>120</td>`) {
		t.Fatalf("tables: %d\n%s", code, body)
	}

	// Page 2 of 3 of a 120-row table: rows 51..100 in key order, escaped.
	code, body = getPage(t, base+"table?name="+url.QueryEscape("odd name")+"&page=2")
	if code != 200 || !strings.Contains(body, "page 2 of 3") || !strings.Contains(body, "<td>51</td>") ||
		!strings.Contains(body, "<td>100</td>") || strings.Contains(body, "<td>101</td>") || strings.Contains(body, "<td>50</td>") ||
		!strings.Contains(body, "&lt;b&gt;v51&lt;/b&gt;") || strings.Contains(body, "<b>v51") ||
		!strings.Contains(body, `rel="prev" href="table?name=odd%20name&amp;page=1"`) || !strings.Contains(body, `rel="next"`) {
		t.Fatalf("table page: %d\n%s", code, body)
	}
	code, body = getPage(t, base+"table?name=customers")
	if code != 200 || !strings.Contains(body, "<td>Ann</td>") || !strings.Contains(body, `class="null"`) {
		t.Fatalf("customers: %d\n%s", code, body)
	}

	code, body = getPage(t, base+"query?sql="+url.QueryEscape("SELECT name FROM customers ORDER BY id"))
	if code != 200 || !strings.Contains(body, "<th>name</th>") || !strings.Contains(body, "<td>Bob</td>") {
		t.Fatalf("query: %d\n%s", code, body)
	}

	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"query?sql=" + url.QueryEscape("DELETE FROM customers"), 400, "sql: ERROR: cannot execute DELETE in a read-only transaction"},
		{"query?sql=" + url.QueryEscape("SELECT nope"), 400, "sql: ERROR: column &#34;nope&#34; does not exist"},
		{"query?sql=", 400, "sql: required"},
		{"table?name=nothing", 404, "name: no table &#34;nothing&#34;"},
		{"table", 400, "name: required"},
		{"table?name=customers&page=0", 400, "page: &#34;0&#34; is not a page number"},
		{"table?name=customers&page=x", 400, "page: &#34;x&#34; is not a page number"},
		{"nowhere", 404, "no console page"},
	} {
		code, body := getPage(t, base+tc.path)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d, want %d with %q\n%s", tc.path, code, tc.code, tc.want, body)
		}
	}
	resp, err := http.Post(base+"query", "application/x-www-form-urlencoded", strings.NewReader("sql=DELETE+FROM+customers"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM customers").Scan(&n); err != nil || n != 2 {
		t.Errorf("customers after the console: %d %v", n, err)
	}
}
