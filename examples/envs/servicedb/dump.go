package servicedb

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentenv/agentenv/internal/sqldump"
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
	sql := dropPublic
	if db.changelog {
		sql += ";" + installChangelog
	}
	if _, err := db.pool.Exec(ctx, sql); err != nil {
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
	// The load is the state before the agent: its rows are not changes.
	if err := simple(ctx, pc, changelogOff); err != nil {
		return err
	}
	if db.pending {
		sql := dropPublic
		if db.changelog {
			sql += ";" + installChangelog
		}
		if err := simple(ctx, pc, sql); err != nil {
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
		if err := sqldump.Load(ctx, pc, string(sql)); err != nil {
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

// get exports the public schema as a SQL dump data/add reads back.
func (db *DB) get(ctx context.Context) ([]protocol.Part, error) {
	if err := db.applyPending(ctx); err != nil {
		return nil, err
	}
	var dump string
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var err error
		dump, err = sqldump.Export(ctx, tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return []protocol.Part{protocol.FilePart(protocol.FileContent{Name: "dump.sql", MimeType: "application/sql", Bytes: []byte(dump)})}, nil
}
