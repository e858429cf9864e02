// Package postgres is the DocumentStore on PostgreSQL (gorm.io/driver/postgres,
// pgx/v5, no cgo), selected by [stores.document] impl = "postgres".
//
// Writers of one id are serialised by a transaction-scoped advisory lock
// on (table, id), so concurrent puts never collide on (id, version) and
// versions stay gap-free. Id and key columns use COLLATE "C" so listings
// are in byte order, as on SQLite.
//
//	docs, err := postgres.Open(ctx, "host=127.0.0.1 port=5432 user=agentenv dbname=agentenv sslmode=disable",
//		&postgres.Options{Schema: "agentenv"})
package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	pgdriver "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/internal/gormdoc"
	"github.com/agentenv/agentenv/registry/redact"
)

// Options tunes Open. A nil *Options means defaults.
type Options struct {
	// Schema, when set, is created if missing and used as search_path, so
	// several stores (or test runs) can share one database. "" = the
	// connection's default search_path.
	Schema string
}

// Store is the PostgreSQL DocumentStore.
type Store struct{ *gormdoc.Store }

var _ registry.DocumentStore = (*Store)(nil)

var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects to dsn (key=value or postgres:// URL) and creates the tables.
// A server that cannot be reached is an error matching registry.ErrUnavailable
// that names the server (password masked).
func Open(ctx context.Context, dsn string, o *Options) (*Store, error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	where := "postgres " + describe(dsn)
	if opt.Schema != "" {
		if !schemaRE.MatchString(opt.Schema) {
			return nil, &registry.InvalidError{Field: "schema", Value: opt.Schema, Reason: "want [a-z_][a-z0-9_]*"}
		}
		admin, err := open(ctx, dsn, where)
		if err != nil {
			return nil, err
		}
		err = admin.WithContext(ctx).Exec(`CREATE SCHEMA IF NOT EXISTS ` + opt.Schema).Error
		closeDB(admin)
		if err != nil && !isDuplicateSchema(err) {
			return nil, fmt.Errorf("%s: create schema %s: %w", where, opt.Schema, err)
		}
		dsn = withSearchPath(dsn, opt.Schema)
		where += " schema=" + opt.Schema
	}
	db, err := open(ctx, dsn, where)
	if err != nil {
		return nil, err
	}
	s, err := gormdoc.New(ctx, db, gormdoc.Dialect{
		Name: "postgres", Where: where, KeyType: `TEXT COLLATE "C"`, LockID: lockID, Unavailable: unavailable,
	})
	if err != nil {
		closeDB(db)
		return nil, err
	}
	return &Store{Store: s}, nil
}

func open(ctx context.Context, dsn, where string) (*gorm.DB, error) {
	db, err := gorm.Open(pgdriver.Open(dsn), &gorm.Config{
		Logger:                 logger.Default.LogMode(logger.Silent),
		TranslateError:         true,
		SkipDefaultTransaction: true,
	})
	if err != nil {
		// The driver's message can echo the DSN; keep only our description.
		return nil, fmt.Errorf("%s: cannot connect: %w: %s", where, registry.ErrUnavailable, redact.MaskURL(err.Error()))
	}
	if err := db.WithContext(ctx).Exec("SELECT 1").Error; err != nil {
		closeDB(db)
		return nil, fmt.Errorf("%s: cannot connect: %w: %v", where, registry.ErrUnavailable, err)
	}
	return db, nil
}

func closeDB(db *gorm.DB) {
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
}

func lockID(tx *gorm.DB, table, id string) error {
	return tx.Exec(`SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`, table+":"+id).Error
}

func isDuplicateSchema(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42P06" || pe.Code == "23505")
}

func unavailable(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), pgconn.Timeout(err):
		return true
	case errors.As(err, &pe):
		// 08: connection exception; 57P: operator intervention (shutdown).
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P")
	}
	return strings.Contains(err.Error(), "conn closed")
}

// describe renders host:port/dbname of a DSN without credentials.
func describe(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			return u.Host + u.Path
		}
		return "(unparsable URL)"
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(dsn) {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		}
	}
	host, port, db := kv["host"], kv["port"], kv["dbname"]
	if host == "" {
		host = "localhost"
	}
	if port == "" {
		port = "5432"
	}
	return host + ":" + port + "/" + db
}

func withSearchPath(dsn, schema string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			q := u.Query()
			q.Set("search_path", schema)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return dsn + " search_path=" + schema
}
