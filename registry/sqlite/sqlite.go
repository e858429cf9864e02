// Package sqlite is the default DocumentStore: one SQLite file through the
// pure-Go github.com/glebarez/sqlite driver (no cgo), in WAL mode with a
// busy timeout, at <state root>/document_store/documents.db.
//
// Writers of one id are serialised by SQLite itself: transactions begin
// IMMEDIATE (_txlock=immediate), so a put's read of the latest version and
// its insert of the next one cannot interleave with another writer, in this
// process or another one sharing the file.
//
//	docs, err := sqlite.Open(ctx, "", nil) // default path
//	defer docs.Close()
package sqlite

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	gosqlite "github.com/glebarez/go-sqlite"
	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/internal/gormdoc"
)

// Options tunes Open. A nil *Options means defaults.
type Options struct {
	// BusyTimeout is how long a writer waits for the file lock; 0 = 5s.
	BusyTimeout time.Duration
}

// Store is the SQLite DocumentStore.
type Store struct {
	*gormdoc.Store
	path string
}

var _ registry.DocumentStore = (*Store)(nil)

// DefaultPath is <state root>/document_store/documents.db.
func DefaultPath() (string, error) {
	root, err := registry.StateRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "document_store", "documents.db"), nil
}

// Open opens (creating if needed) the database at path ("" = DefaultPath).
func Open(ctx context.Context, path string, o *Options) (*Store, error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.BusyTimeout <= 0 {
		opt.BusyTimeout = 5 * time.Second
	}
	if path == "" {
		p, err := DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
		root, _ := registry.StateRoot()
		if err := registry.EnsureStateDir(root, filepath.Dir(path)); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		// An explicit path is the caller's: no .gitignore is dropped there.
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opt.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + q.Encode()
	where := "sqlite " + abs
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{
		Logger:                 logger.Default.LogMode(logger.Silent),
		TranslateError:         true,
		SkipDefaultTransaction: true,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: open: %w: %v", where, registry.ErrUnavailable, err)
	}
	var mode string
	if err := db.WithContext(ctx).Raw("PRAGMA journal_mode").Scan(&mode).Error; err != nil {
		closeDB(db)
		return nil, fmt.Errorf("%s: open: %w: %v", where, registry.ErrUnavailable, err)
	}
	if mode != "wal" {
		closeDB(db)
		return nil, fmt.Errorf("%s: journal_mode is %q, want wal", where, mode)
	}
	s, err := gormdoc.New(ctx, db, gormdoc.Dialect{
		Name: "sqlite", Where: where, KeyType: "TEXT", Unavailable: unavailable,
	})
	if err != nil {
		closeDB(db)
		return nil, err
	}
	return &Store{Store: s, path: abs}, nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

func closeDB(db *gorm.DB) {
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
}

// SQLite primary result codes that mean the file cannot be used right now.
const (
	codeBusy     = 5
	codeLocked   = 6
	codeReadonly = 8
	codeIOErr    = 10
	codeFull     = 13
	codeCantOpen = 14
)

func unavailable(err error) bool {
	var e *gosqlite.Error
	if errors.As(err, &e) {
		switch e.Code() & 0xff {
		case codeBusy, codeLocked, codeReadonly, codeIOErr, codeFull, codeCantOpen:
			return true
		}
	}
	return false
}
