// Package servicedb is the db MCP server of a service_db env: an envsdk
// env over one PostgreSQL database. Agents list tables, describe one and
// run queries; queries run in READ ONLY transactions, so the env is
// read-only by default, and the execute tool writes only for the roles
// named in Options.WriteRoles (DB_WRITE_ROLES). The gateway's role rules
// still apply on top.
//
// The data plane moves the database's state as a SQL dump: data/add runs
// a dump (plain SQL, pg_dump's plain format with COPY blocks included) in
// one transaction, so a dump that fails reports the database's error and
// the dump's line and leaves the previous state intact; data/get exports
// the public schema as a dump that data/add reads back; data/reset
// empties the public schema. The reset is applied in the same
// transaction as the next data/add (or before the next tool call or
// data/get), so load_artifact's reset-then-add never leaves a half-loaded
// or emptied database behind a failing dump: a failed data/add drops the
// pending reset with the rest of its transaction.
//
//	pool, _ := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	s := servicedb.New(pool, &servicedb.Options{WriteRoles: []string{"admin"}})
//	_ = s.Run(ctx)
package servicedb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/protocol"
)

// Options configure New. A nil *Options is the zero value.
type Options struct {
	// WriteRoles are the caller roles the execute tool serves; "*" means
	// every caller. Empty means nobody may write (read-only).
	WriteRoles []string
	// MaxRows bounds the rows a query returns; 0 = 500.
	MaxRows int
	// Env is passed to envsdk.New.
	Env *envsdk.Options
}

// DB is the env's state: a pool over its database.
type DB struct {
	pool    *pgxpool.Pool
	opts    Options
	mu      sync.Mutex // serialises data plane calls and the pending reset
	pending bool       // data/reset received, not applied yet
	// changelog is set once InstallChangelog succeeded: a reset then
	// installs it again in the emptied schema.
	changelog bool
}

// New returns the db env server over pool.
func New(pool *pgxpool.Pool, o *Options) (*envsdk.Server, *DB) {
	db := &DB{pool: pool}
	if o != nil {
		db.opts = *o
	}
	if db.opts.MaxRows == 0 {
		db.opts.MaxRows = 500
	}
	s := envsdk.New(&protocol.EnvCard{Name: "db"}, db.opts.Env)
	s.HandleReset(db.reset)
	s.HandleAdd(db.add)
	s.HandleGet(db.get)
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_list_tables", Description: "List the tables of the database's public schema."}, db.listTables)
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_describe_table", Description: "Describe a table: its columns (name, type, nullable, default) and constraints."}, db.describe)
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_query", Description: "Run one read-only SQL query and return its rows (at most 500)."}, db.query)
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_execute", Description: "Run SQL that changes the database (INSERT, UPDATE, DELETE, DDL); only some roles may."}, db.execute)
	s.HandlePages(ConsolePath, db.Console())
	return s, db
}

// TableList is list_tables' result.
type TableList struct {
	Tables []string `json:"tables"`
}

// NoInput is the input of tools without arguments.
type NoInput struct{}

func (db *DB) listTables(ctx context.Context, _ *envsdk.Request, _ NoInput) (TableList, error) {
	if err := db.applyPending(ctx); err != nil {
		return TableList{}, err
	}
	names, err := db.tables(ctx)
	return TableList{Tables: names}, err
}

// tables lists the base tables of the public schema, by name.
func (db *DB) tables(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> $1 ORDER BY table_name`, ChangelogTable)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if names == nil {
		names = []string{}
	}
	return names, err
}

// DescribeInput names a table.
type DescribeInput struct {
	Table string `json:"table" description:"Table name in the public schema."`
}

// Column is one column of a table.
type Column struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Nullable bool    `json:"nullable"`
	Default  *string `json:"default,omitempty"`
}

// TableInfo is describe_table's result.
type TableInfo struct {
	Table       string   `json:"table"`
	Columns     []Column `json:"columns"`
	Constraints []string `json:"constraints"`
}

func (db *DB) describe(ctx context.Context, _ *envsdk.Request, in DescribeInput) (TableInfo, error) {
	if in.Table == "" {
		return TableInfo{}, errors.New("table: required")
	}
	if err := db.applyPending(ctx); err != nil {
		return TableInfo{}, err
	}
	rows, err := db.pool.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
			pg_get_expr(d.adbin, d.adrelid)
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE n.nspname = 'public' AND c.relname = $1 AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, in.Table)
	if err != nil {
		return TableInfo{}, err
	}
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Column, error) {
		var c Column
		err := r.Scan(&c.Name, &c.Type, &c.Nullable, &c.Default)
		return c, err
	})
	if err != nil {
		return TableInfo{}, err
	}
	if len(cols) == 0 {
		return TableInfo{}, fmt.Errorf("table: no table %q in the public schema (list_tables lists them)", in.Table)
	}
	rows, err = db.pool.Query(ctx, `SELECT conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conrelid = ('public.' || quote_ident($1))::regclass ORDER BY conname`, in.Table)
	if err != nil {
		return TableInfo{}, err
	}
	cons, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if cons == nil {
		cons = []string{}
	}
	return TableInfo{Table: in.Table, Columns: cols, Constraints: cons}, err
}

// SQLInput is one SQL text.
type SQLInput struct {
	SQL string `json:"sql" description:"The SQL to run."`
}

// Rows is query's result: the column names and each row's values.
type Rows struct {
	Columns   []string `json:"columns"`
	Rows      [][]any  `json:"rows"`
	Truncated bool     `json:"truncated,omitempty"`
}

func (db *DB) query(ctx context.Context, _ *envsdk.Request, in SQLInput) (Rows, error) {
	if strings.TrimSpace(in.SQL) == "" {
		return Rows{}, errors.New("sql: required")
	}
	if err := db.applyPending(ctx); err != nil {
		return Rows{}, err
	}
	return db.readOnly(ctx, db.opts.MaxRows, in.SQL)
}

// readOnly runs one statement in a READ ONLY transaction and returns at
// most max rows. A READ ONLY transaction makes the database refuse
// writes, whatever the SQL says (a function with side effects included).
func (db *DB) readOnly(ctx context.Context, max int, sql string, args ...any) (Rows, error) {
	out := Rows{Columns: []string{}, Rows: [][]any{}}
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for _, f := range rows.FieldDescriptions() {
			out.Columns = append(out.Columns, f.Name)
		}
		for rows.Next() {
			if len(out.Rows) == max {
				out.Truncated = true
				break
			}
			vals, err := rows.Values()
			if err != nil {
				return err
			}
			out.Rows = append(out.Rows, jsonValues(vals))
		}
		return rows.Err()
	})
	return out, err
}

// jsonValues turns values JSON cannot encode as is into text.
func jsonValues(vals []any) []any {
	for i, v := range vals {
		switch v.(type) {
		case nil, bool, string, int16, int32, int64, float32, float64, map[string]any, []any:
		default:
			vals[i] = fmt.Sprint(v)
		}
	}
	return vals
}

// Executed is execute's result.
type Executed struct {
	RowsAffected int64  `json:"rows_affected"`
	Command      string `json:"command"`
}

func (db *DB) execute(ctx context.Context, req *envsdk.Request, in SQLInput) (Executed, error) {
	role := req.Caller.Role
	if !db.mayWrite(role) {
		if role == "" {
			return Executed{}, errors.New("this database is read-only for callers without a role (DB_WRITE_ROLES names the roles that may write)")
		}
		return Executed{}, fmt.Errorf("role %q may not write to this database (DB_WRITE_ROLES names the roles that may)", role)
	}
	if strings.TrimSpace(in.SQL) == "" {
		return Executed{}, errors.New("sql: required")
	}
	if err := db.applyPending(ctx); err != nil {
		return Executed{}, err
	}
	tag, err := db.pool.Exec(ctx, in.SQL)
	if err != nil {
		return Executed{}, err
	}
	return Executed{RowsAffected: tag.RowsAffected(), Command: tag.String()}, nil
}

func (db *DB) mayWrite(role string) bool {
	return slices.Contains(db.opts.WriteRoles, "*") || (role != "" && slices.Contains(db.opts.WriteRoles, role))
}
