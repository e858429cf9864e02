package servicedb_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envclient"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/examples/envs/servicedb"
	"github.com/agentenv/agentenv/internal/pgserver/pgservertest"
	"github.com/agentenv/agentenv/protocol"
)

// seed is a small pg_dump-like dump: a sequence-backed table, a COPY
// block, a dollar-quoted string, comments and a psql meta-command.
const seed = `-- a seed
\restrict abc
CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL, note text);
COPY customers (id, name, note) FROM stdin;
1	Ann	first; customer
2	Bob	\N
\.
SELECT setval('customers_id_seq', 2);
/* orders refer to customers */
CREATE TABLE orders (id int PRIMARY KEY, customer_id int REFERENCES customers(id), item text DEFAULT $$it's; fine$$);
INSERT INTO orders VALUES (10, 1, 'book'), (11, 2, DEFAULT);
`

func start(t *testing.T, roles ...string) (*envsdktest.Env, *envclient.Client, *pgxpool.Pool) {
	pg := pgservertest.Start(t)
	pool, err := pgxpool.New(context.Background(), pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, db := servicedb.New(pool, &servicedb.Options{WriteRoles: roles, Env: &envsdk.Options{Getenv: func(string) string { return "" }}})
	if err := db.InstallChangelog(context.Background()); err != nil {
		t.Fatal(err)
	}
	env := envsdktest.Start(t, s)
	return env, envclient.New(env.BaseURL, nil), pool
}

func sqlPart(sql string) []protocol.Part {
	return []protocol.Part{protocol.FilePart(protocol.FileContent{Name: "seed.sql", MimeType: "application/sql", Bytes: []byte(sql)})}
}

func TestLoadQueryDescribeExportRoundTrip(t *testing.T) {
	env, c, _ := start(t)
	ctx := context.Background()
	if err := c.ResetData(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.AddData(ctx, sqlPart(seed)); err != nil {
		t.Fatal(err)
	}
	res := env.Call(t, "db_list_tables", map[string]any{})
	if res.IsError || !strings.Contains(string(res.Structured), `"customers","orders"`) {
		t.Fatalf("list_tables = %s %s", res.Structured, res.Text)
	}
	res = env.Call(t, "db_query", map[string]any{"sql": "SELECT c.name, o.item FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id"})
	if res.IsError || !strings.Contains(string(res.Structured), `[["Ann","book"],["Bob","it's; fine"]]`) {
		t.Fatalf("query = %s %s", res.Structured, res.Text)
	}
	res = env.Call(t, "db_describe_table", map[string]any{"table": "orders"})
	if res.IsError || !strings.Contains(string(res.Structured), "FOREIGN KEY (customer_id) REFERENCES customers(id)") {
		t.Fatalf("describe = %s %s", res.Structured, res.Text)
	}

	exported, err := c.GetData(ctx, nil)
	if err != nil || len(exported) != 1 || exported[0].File == nil {
		t.Fatalf("export %v %v", exported, err)
	}
	if err := c.ResetData(ctx); err != nil {
		t.Fatal(err)
	}
	res = env.Call(t, "db_list_tables", map[string]any{})
	if !strings.Contains(string(res.Structured), `"tables":[]`) {
		t.Fatalf("after reset: %s", res.Structured)
	}
	if err := c.AddData(ctx, exported); err != nil {
		t.Fatalf("re-load the export: %v\n%s", err, exported[0].File.Bytes)
	}
	again, err := c.GetData(ctx, nil)
	if err != nil || string(again[0].File.Bytes) != string(exported[0].File.Bytes) {
		t.Fatalf("export after re-load differs (%v):\n%s\n---\n%s", err, again[0].File.Bytes, exported[0].File.Bytes)
	}
	// The sequence came back too: its last value is 2.
	res = env.Call(t, "db_query", map[string]any{"sql": "SELECT last_value FROM customers_id_seq"})
	if !strings.Contains(string(res.Structured), `[[2]]`) {
		t.Fatalf("sequence = %s %s", res.Structured, res.Text)
	}
}

func TestFailingDumpNamesLineAndKeepsState(t *testing.T) {
	env, c, _ := start(t)
	ctx := context.Background()
	if err := c.AddData(ctx, sqlPart(seed)); err != nil {
		t.Fatal(err)
	}
	bad := "CREATE TABLE x (a int);\nINSERT INTO x VALUES (1);\n\nINSERT INTO nosuch VALUES (2);\n"
	// load_artifact's order: reset, then add.
	if err := c.ResetData(ctx); err != nil {
		t.Fatal(err)
	}
	err := c.AddData(ctx, sqlPart(bad))
	if err == nil || !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), `relation "nosuch" does not exist`) {
		t.Fatalf("err = %v, want line 4 and the database's message", err)
	}
	// A syntax error deep inside a statement names its own line.
	err = c.AddData(ctx, sqlPart("CREATE TABLE y (\n  a int,\n  b intt\n);"))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("err = %v, want line 3", err)
	}
	res := env.Call(t, "db_list_tables", map[string]any{})
	if !strings.Contains(string(res.Structured), `"customers","orders"`) {
		t.Fatalf("state lost after a failed load: %s", res.Structured)
	}
}

func TestReadOnlyByDefaultWritesPerRole(t *testing.T) {
	env, c, _ := start(t, "admin")
	ctx := context.Background()
	if err := c.AddData(ctx, sqlPart(seed)); err != nil {
		t.Fatal(err)
	}
	res := env.Call(t, "db_query", map[string]any{"sql": "DELETE FROM orders"})
	if !res.IsError || !strings.Contains(res.Text, "read-only transaction") {
		t.Fatalf("a write through query: %s", res.Text)
	}
	res = env.Call(t, "db_execute", map[string]any{"sql": "DELETE FROM orders"})
	if !res.IsError || !strings.Contains(res.Text, "read-only for callers without a role") {
		t.Fatalf("execute without a role: %s", res.Text)
	}
	cl := env.NewClient(t, nil)
	r, err := envsdktest.CallTool(ctx, cl, "db_execute", map[string]any{"sql": "DELETE FROM orders WHERE id = 10"}, map[string]any{protocol.MetaRole: "agent"})
	if err != nil || !r.IsError || !strings.Contains(r.Text, `role "agent" may not write`) {
		t.Fatalf("execute as agent: %+v %v", r, err)
	}
	r, err = envsdktest.CallTool(ctx, cl, "db_execute", map[string]any{"sql": "DELETE FROM orders WHERE id = 10"}, map[string]any{protocol.MetaRole: "admin"})
	var out servicedb.Executed
	if err != nil || r.IsError || json.Unmarshal(r.Structured, &out) != nil || out.RowsAffected != 1 {
		t.Fatalf("execute as admin: %+v %v", r, err)
	}
}

func TestBadInputNamesTheField(t *testing.T) {
	env, _, _ := start(t)
	for tool, args := range map[string]map[string]any{
		"db_query":          {"sql": " "},
		"db_describe_table": {"table": "nosuch"},
	} {
		res := env.Call(t, tool, args)
		if !res.IsError || !(strings.HasPrefix(res.Text, "sql:") || strings.HasPrefix(res.Text, "table:")) {
			t.Errorf("%s(%v) = %q, want an error naming the field", tool, args, res.Text)
		}
	}
}
