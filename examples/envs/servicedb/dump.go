package servicedb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentenv/agentenv/protocol"
)

// dropPublic empties the public schema.
const dropPublic = "DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public"

// reset marks the schema for emptying; the next add applies it in its own
// transaction (see the package comment).
func (db *DB) reset(context.Context) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.pending = true
	return nil
}

// applyPending applies a pending reset before a read or a write.
func (db *DB) applyPending(ctx context.Context) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if !db.pending {
		return nil
	}
	if _, err := db.pool.Exec(ctx, dropPublic); err != nil {
		return fmt.Errorf("apply data/reset: %w", err)
	}
	db.pending = false
	return nil
}

// add runs every file or data part as one SQL dump, all in one
// transaction together with a pending reset.
func (db *DB) add(ctx context.Context, parts []protocol.Part) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	pc := conn.Conn().PgConn()
	if err := simple(ctx, pc, "BEGIN"); err != nil {
		return err
	}
	commit := false
	defer func() {
		if !commit {
			_ = simple(context.WithoutCancel(ctx), pc, "ROLLBACK")
		}
		// Committed or not, the reset went with this load: a failed load
		// leaves the state as it was before the reset.
		db.pending = false
	}()
	if db.pending {
		if err := simple(ctx, pc, dropPublic); err != nil {
			return fmt.Errorf("data/reset: %w", err)
		}
	}
	for i, p := range parts {
		var sql []byte
		name := fmt.Sprintf("part %d", i)
		switch {
		case p.Kind == protocol.PartKindData:
			sql = p.Data
		case p.Kind == protocol.PartKindFile && p.File != nil && p.File.Bytes != nil:
			sql = p.File.Bytes
			if p.File.Name != "" {
				name += " (" + p.File.Name + ")"
			}
		case p.Kind == protocol.PartKindFile:
			return fmt.Errorf("%s: only inline file bytes are read (no URI fetching)", name)
		default:
			continue // text parts are ignored by convention
		}
		if err := load(ctx, pc, string(sql)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := simple(ctx, pc, "COMMIT"); err != nil {
		return err
	}
	commit = true
	return nil
}

func simple(ctx context.Context, pc *pgconn.PgConn, sql string) error {
	_, err := pc.Exec(ctx, sql).ReadAll()
	return err
}

// LoadError is a dump statement the database refused: the database's
// error and the dump's line.
type LoadError struct {
	Line int
	Err  error
}

func (e *LoadError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

func (e *LoadError) Unwrap() error { return e.Err }

// load runs the statements of a dump one by one, so an error names its
// line; COPY ... FROM stdin blocks are fed their data rows.
func load(ctx context.Context, pc *pgconn.PgConn, dump string) error {
	for _, st := range splitDump(dump) {
		var err error
		if st.copyData != nil {
			_, err = pc.CopyFrom(ctx, strings.NewReader(*st.copyData), st.sql)
		} else {
			err = simple(ctx, pc, st.sql)
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

// get exports the public schema as a SQL dump data/add reads back.
func (db *DB) get(ctx context.Context) ([]protocol.Part, error) {
	if err := db.applyPending(ctx); err != nil {
		return nil, err
	}
	var dump string
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var err error
		dump, err = Export(ctx, tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return []protocol.Part{protocol.FilePart(protocol.FileContent{Name: "dump.sql", MimeType: "application/sql", Bytes: []byte(dump)})}, nil
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
// and triggers are not exported.
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
			FROM pg_sequences WHERE schemaname = 'public' ORDER BY sequencename`,
		`SELECT format('CREATE TABLE %I (%s);', c.relname, string_agg(format('%I %s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
				CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END,
				coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')), ', ' ORDER BY a.attnum))
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
			LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
			WHERE n.nspname = 'public' AND c.relkind = 'r' GROUP BY c.relname ORDER BY c.relname`,
		`SELECT format('ALTER SEQUENCE %I OWNED BY %I.%I;', s.relname, t.relname, a.attname)
			FROM pg_depend dep JOIN pg_class s ON s.oid = dep.objid AND s.relkind = 'S'
			JOIN pg_class t ON t.oid = dep.refobjid JOIN pg_namespace n ON n.oid = t.relnamespace
			JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = dep.refobjsubid
			WHERE n.nspname = 'public' AND dep.deptype = 'a' ORDER BY s.relname`,
	}
	for _, s := range steps {
		if err := lines(s); err != nil {
			return "", err
		}
	}
	rows, err := q.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY c.relname`)
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
			WHERE n.nspname = 'public' AND con.contype <> 'n' ORDER BY con.contype = 'f', t.relname, con.conname`,
		`SELECT indexdef || ';' FROM pg_indexes i WHERE schemaname = 'public'
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
