package sqldump

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LoadError is a dump statement the database refused: the database's
// error and the dump's line.
type LoadError struct {
	Line int
	Err  error
}

func (e *LoadError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

func (e *LoadError) Unwrap() error { return e.Err }

// Load runs the statements of a dump one by one, so an error names its
// line; COPY ... FROM stdin blocks are fed their data rows.
func Load(ctx context.Context, pc *pgconn.PgConn, dump string) error {
	for _, st := range splitDump(dump) {
		var err error
		if st.copyData != nil {
			_, err = pc.CopyFrom(ctx, strings.NewReader(*st.copyData), st.sql)
		} else {
			_, err = pc.Exec(ctx, st.sql).ReadAll()
		}
		if err != nil {
			line := st.line
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Position > 0 && int(pe.Position) <= len(st.sql)+1 {
				line += strings.Count(string([]rune(st.sql)[:pe.Position-1]), "\n")
			}
			return &LoadError{Line: line, Err: err}
		}
	}
	return nil
}

// Querier runs queries: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

var _ Querier = (*pgxpool.Pool)(nil)

// Export writes the public schema as SQL: sequences, tables (columns,
// defaults, NOT NULL), rows (one INSERT ... json_populate_recordset per
// table, which round-trips every type through its JSON form), then
// constraints (foreign keys last) and the other indexes. Views, functions
// and triggers are not exported, nor the table _changelog (the change log
// a service_db server keeps of the agent's changes, not part of the
// state) and its sequence.
func Export(ctx context.Context, q Querier) (string, error) {
	var b strings.Builder
	b.WriteString("-- agentenv service_db export of schema public\n")
	lines := func(sql string) error {
		rows, err := q.Query(ctx, sql)
		if err != nil {
			return err
		}
		ls, err := pgx.CollectRows(rows, pgx.RowTo[string])
		for _, l := range ls {
			b.WriteString(l)
			b.WriteString("\n")
		}
		return err
	}
	steps := []string{
		// Sequences first: column defaults name them.
		`SELECT format('CREATE SEQUENCE %I;', sequencename) || coalesce(format(' SELECT setval(%L, %s);', quote_ident(sequencename), last_value), '')
			FROM pg_sequences WHERE schemaname = 'public' AND sequencename <> '_changelog_id_seq' ORDER BY sequencename`,
		`SELECT format('CREATE TABLE %I (%s);', c.relname, string_agg(format('%I %s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
				CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END,
				coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')), ', ' ORDER BY a.attnum))
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
			LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
			WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname <> '_changelog' GROUP BY c.relname ORDER BY c.relname`,
		`SELECT format('ALTER SEQUENCE %I OWNED BY %I.%I;', s.relname, t.relname, a.attname)
			FROM pg_depend dep JOIN pg_class s ON s.oid = dep.objid AND s.relkind = 'S'
			JOIN pg_class t ON t.oid = dep.refobjid JOIN pg_namespace n ON n.oid = t.relnamespace
			JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = dep.refobjsubid
			WHERE n.nspname = 'public' AND dep.deptype = 'a' AND t.relname <> '_changelog' ORDER BY s.relname`,
	}
	for _, s := range steps {
		if err := lines(s); err != nil {
			return "", err
		}
	}
	rows, err := q.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname <> '_changelog' ORDER BY c.relname`)
	if err != nil {
		return "", err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	for _, t := range tables {
		if err := lines(fmt.Sprintf(`SELECT format('INSERT INTO %%I SELECT * FROM json_populate_recordset(NULL::%%I, %%L);', %s, %s, json_agg(x)::text)
			FROM %s x HAVING count(*) > 0`, quoteLiteral(t), quoteLiteral(t), pgx.Identifier{"public", t}.Sanitize())); err != nil {
			return "", err
		}
	}
	tail := []string{
		`SELECT format('ALTER TABLE %I ADD CONSTRAINT %I %s;', t.relname, con.conname, pg_get_constraintdef(con.oid))
			FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
			WHERE n.nspname = 'public' AND con.contype <> 'n' AND t.relname <> '_changelog' ORDER BY con.contype = 'f', t.relname, con.conname`,
		`SELECT indexdef || ';' FROM pg_indexes i WHERE schemaname = 'public' AND tablename <> '_changelog'
			AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conname = i.indexname) ORDER BY indexname`,
	}
	for _, s := range tail {
		if err := lines(s); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
