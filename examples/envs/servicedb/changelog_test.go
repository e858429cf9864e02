package servicedb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// changes lists the changelog as "table op old->new" lines, in id order.
func changes(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT table_name || ' ' || operation || ' ' ||
		coalesce(old_row->>'status', '-') || '->' || coalesce(new_row->>'status', '-') FROM _changelog ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestChangelog: a load is not recorded; the agent's inserts, updates and
// deletes are, on loaded tables and on tables it creates; a reset and a
// new load start an empty log; the export and list_tables leave the log out.
func TestChangelog(t *testing.T) {
	env, c, pool := start(t, "*")
	ctx := context.Background()
	load := func() {
		t.Helper()
		if err := c.ResetData(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.AddData(ctx, sqlPart("CREATE TABLE orders (id int PRIMARY KEY, status text);\nINSERT INTO orders VALUES (1, 'paid'), (2, 'paid');\n")); err != nil {
			t.Fatal(err)
		}
	}
	load()
	if got := changes(t, pool); len(got) != 0 {
		t.Fatalf("after a load: %v", got)
	}
	for _, sql := range []string{
		"UPDATE orders SET status = 'shipped' WHERE id = 2",
		"INSERT INTO orders VALUES (3, 'new')",
		"DELETE FROM orders WHERE id = 1",
		"CREATE TABLE notes (id int, status text)",
		"INSERT INTO notes VALUES (1, 'draft')",
	} {
		if res := env.Call(t, "db_execute", map[string]any{"sql": sql}); res.IsError {
			t.Fatalf("%s: %s", sql, res.Text)
		}
	}
	want := "orders UPDATE paid->shipped|orders INSERT -->new|orders DELETE paid->-|notes INSERT -->draft"
	if got := strings.Join(changes(t, pool), "|"); got != want {
		t.Fatalf("changelog:\n got %s\nwant %s", got, want)
	}
	res := env.Call(t, "db_list_tables", map[string]any{})
	if strings.Contains(string(res.Structured), "_changelog") {
		t.Errorf("list_tables lists the changelog: %s", res.Structured)
	}
	parts, err := c.GetData(ctx, nil)
	if err != nil || len(parts) != 1 {
		t.Fatalf("export: %v %v", parts, err)
	}
	if dump := string(parts[0].File.Bytes); strings.Contains(dump, "_changelog") || !strings.Contains(dump, "notes") {
		t.Errorf("export:\n%s", dump)
	}
	load()
	if got := changes(t, pool); len(got) != 0 {
		t.Fatalf("after reset and load: %v", got)
	}
	if res := env.Call(t, "db_execute", map[string]any{"sql": "UPDATE orders SET status = 'x' WHERE id = 1"}); res.IsError {
		t.Fatal(res.Text)
	}
	if got := changes(t, pool); len(got) != 1 {
		t.Fatalf("after reset, load and one update: %v", got)
	}
}
