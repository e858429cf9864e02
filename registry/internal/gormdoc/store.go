package gormdoc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/internal/docprep"
)

// Dialect is what differs between SQL backends.
type Dialect struct {
	// Name is "sqlite" or "postgres"; Where locates the database in
	// messages ("sqlite /path/documents.db"); it must not hold a password.
	Name, Where string
	// KeyType is the SQL type of id/key columns.
	KeyType string
	// LockID serialises writers of one (table, id) inside tx; nil when the
	// transaction itself is exclusive (SQLite with _txlock=immediate).
	LockID func(tx *gorm.DB, table, id string) error
	// Unavailable reports errors meaning the database cannot be reached.
	Unavailable func(err error) bool
}

// Store implements registry.DocumentStore on a *gorm.DB.
type Store struct {
	db *gorm.DB
	d  Dialect
	// now is the clock (UTC); tests of ordering do not need to replace it.
	now func() time.Time
}

var _ registry.DocumentStore = (*Store)(nil)

const timeCol = "2006-01-02T15:04:05.000000000Z" // fixed width: sorts as text

// New creates the tables of every collection (if missing) and returns the
// store. It owns db from then on (Close closes it).
func New(ctx context.Context, db *gorm.DB, d Dialect) (*Store, error) {
	s := &Store{db: db, d: d, now: func() time.Time { return time.Now().UTC() }}
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if d.LockID != nil {
			if err := d.LockID(tx, "schema", "agentenv"); err != nil {
				return err
			}
		}
		for _, c := range registry.Collections() {
			for _, stmt := range s.ddl(c) {
				if err := tx.Exec(stmt).Error; err != nil {
					return fmt.Errorf("create table for %s: %w", c, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("open", err)
	}
	return s, nil
}

func table(c registry.Collection) string { return "docs_" + string(c) }

func (s *Store) ddl(c registry.Collection) []string {
	t, k := table(c), s.d.KeyType
	if c.Versioned() {
		return []string{
			`CREATE TABLE IF NOT EXISTS ` + t + ` (id ` + k + ` NOT NULL, version INTEGER NOT NULL,
 type TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (id, version))`,
		}
	}
	return []string{
		`CREATE TABLE IF NOT EXISTS ` + t + ` (rkey ` + k + ` NOT NULL PRIMARY KEY, rev BIGINT NOT NULL,
 created_at TEXT NOT NULL, updated_at TEXT NOT NULL, doc TEXT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS ` + t + `_created ON ` + t + ` (created_at)`,
	}
}

// wrap names the backend and classifies connection failures.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var ie *registry.InvalidError
	var nf *registry.NotFoundError
	if errors.As(err, &ie) || errors.As(err, &nf) || errors.Is(err, registry.ErrConflict) ||
		errors.Is(err, registry.ErrAlreadyExists) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if s.d.Unavailable != nil && s.d.Unavailable(err) {
		return fmt.Errorf("%s: %s: %w: %v", s.d.Where, op, registry.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %s: %w", s.d.Where, op, err)
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return s.wrap("ping", err)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		if s.d.Unavailable == nil || !s.d.Unavailable(err) {
			return fmt.Errorf("%s: ping: %w: %v", s.d.Where, registry.ErrUnavailable, err)
		}
		return s.wrap("ping", err)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Put inserts the next version of id.
func (s *Store) Put(ctx context.Context, c registry.Collection, id string, body json.RawMessage, o *registry.PutOptions) (registry.Document, error) {
	if err := c.CheckVersioned(); err != nil {
		return registry.Document{}, err
	}
	if err := registry.ValidateID(id); err != nil {
		return registry.Document{}, err
	}
	m, typ, err := docprep.Document(body)
	if err != nil {
		return registry.Document{}, err
	}
	want := 0
	if o != nil {
		if o.Version < 0 {
			return registry.Document{}, &registry.InvalidError{Field: "version", Value: fmt.Sprint(o.Version), Reason: "must be >= 0"}
		}
		want = o.Version
	}
	var out registry.Document
	// The lock makes duplicates impossible in one database; the loop covers
	// a backend without one (or a manual insert) racing us.
	for attempt := 0; ; attempt++ {
		err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if s.d.LockID != nil {
				if err := s.d.LockID(tx, table(c), id); err != nil {
					return err
				}
			}
			var latest []struct {
				Version int
				Type    string
			}
			if err := tx.Raw(`SELECT version, type FROM `+table(c)+` WHERE id = ? ORDER BY version DESC LIMIT 1`, id).
				Scan(&latest).Error; err != nil {
				return err
			}
			next := 1
			if len(latest) == 1 {
				if latest[0].Type != typ {
					return fmt.Errorf("%w: %s %s is of type %q; refusing a put of type %q", registry.ErrConflict,
						c.Kind(), id, latest[0].Type, typ)
				}
				next = latest[0].Version + 1
			}
			if want > 0 && want != next {
				return fmt.Errorf("%w: %s %s: expected to create version %d but the next version is %d",
					registry.ErrConflict, c.Kind(), id, want, next)
			}
			now := s.now()
			m["id"], m["version"], m["created_at_utc"] = id, next, registry.FormatISO(now)
			data, err := json.Marshal(m)
			if err != nil {
				return &registry.InvalidError{Field: "document", Reason: err.Error()}
			}
			if err := tx.Exec(`INSERT INTO `+table(c)+` (id, version, type, created_at, doc) VALUES (?, ?, ?, ?, ?)`,
				id, next, typ, now.Format(timeCol), string(data)).Error; err != nil {
				return err
			}
			out = registry.Document{Collection: c, ID: id, Version: next, Type: typ, CreatedAt: now, Data: data}
			return nil
		})
		if errors.Is(err, gorm.ErrDuplicatedKey) && attempt < 5 && want == 0 {
			continue
		}
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			err = fmt.Errorf("%w: %s %s: version taken by a concurrent writer", registry.ErrConflict, c.Kind(), id)
		}
		if err != nil {
			return registry.Document{}, s.wrap("put "+string(c)+" "+id, err)
		}
		return out, nil
	}
}

type docRow struct {
	ID        string
	Version   int
	Type      string
	CreatedAt string
	Doc       string
}

func (r docRow) document(c registry.Collection) registry.Document {
	t, _ := time.Parse(timeCol, r.CreatedAt)
	return registry.Document{Collection: c, ID: r.ID, Version: r.Version, Type: r.Type, CreatedAt: t, Data: json.RawMessage(r.Doc)}
}

// Get reads one version (0 = latest).
func (s *Store) Get(ctx context.Context, c registry.Collection, ref registry.Ref) (registry.Document, error) {
	if err := c.CheckVersioned(); err != nil {
		return registry.Document{}, err
	}
	if err := registry.ValidateID(ref.ID); err != nil {
		return registry.Document{}, err
	}
	if ref.Version < 0 {
		return registry.Document{}, &registry.InvalidError{Field: "version", Value: fmt.Sprint(ref.Version), Reason: "must be >= 1 (or 0 for latest)"}
	}
	var rows []docRow
	q := s.db.WithContext(ctx)
	if ref.Version == 0 {
		q = q.Raw(`SELECT id, version, type, created_at, doc FROM `+table(c)+` WHERE id = ? ORDER BY version DESC LIMIT 1`, ref.ID)
	} else {
		q = q.Raw(`SELECT id, version, type, created_at, doc FROM `+table(c)+` WHERE id = ? AND version = ?`, ref.ID, ref.Version)
	}
	if err := q.Scan(&rows).Error; err != nil {
		return registry.Document{}, s.wrap("get "+string(c)+" "+ref.String(), err)
	}
	if len(rows) == 0 {
		return registry.Document{}, &registry.NotFoundError{Kind: c.Kind(), ID: ref.ID, Version: ref.Version}
	}
	return rows[0].document(c), nil
}

// Versions lists every version of id, oldest first.
func (s *Store) Versions(ctx context.Context, c registry.Collection, id string) ([]registry.Document, error) {
	if err := c.CheckVersioned(); err != nil {
		return nil, err
	}
	if err := registry.ValidateID(id); err != nil {
		return nil, err
	}
	var rows []docRow
	if err := s.db.WithContext(ctx).Raw(`SELECT id, version, type, created_at, doc FROM `+table(c)+
		` WHERE id = ? ORDER BY version`, id).Scan(&rows).Error; err != nil {
		return nil, s.wrap("versions "+string(c)+" "+id, err)
	}
	if len(rows) == 0 {
		return nil, &registry.NotFoundError{Kind: c.Kind(), ID: id}
	}
	out := make([]registry.Document, len(rows))
	for i, r := range rows {
		out[i] = r.document(c)
	}
	return out, nil
}

// List returns the latest version of each id, by id.
func (s *Store) List(ctx context.Context, c registry.Collection, o *registry.ListOptions) ([]registry.Document, error) {
	if err := c.CheckVersioned(); err != nil {
		return nil, err
	}
	opt, err := docprep.ListOptions(o)
	if err != nil {
		return nil, err
	}
	t := table(c)
	sql := `SELECT t.id, t.version, t.type, t.created_at, t.doc FROM ` + t + ` t JOIN (SELECT id, MAX(version) AS v FROM ` + t
	var args []any
	if opt.IDPrefix != "" {
		sql += ` WHERE id >= ?`
		args = append(args, opt.IDPrefix)
		if hi, ok := prefixUpper(opt.IDPrefix); ok {
			sql += ` AND id < ?`
			args = append(args, hi)
		}
	}
	sql += ` GROUP BY id) m ON t.id = m.id AND t.version = m.v`
	if opt.Type != "" {
		sql += ` WHERE t.type = ?`
		args = append(args, opt.Type)
	}
	sql += ` ORDER BY t.id`
	if opt.Limit > 0 {
		sql += fmt.Sprintf(` LIMIT %d`, opt.Limit)
	}
	if opt.Offset > 0 {
		if opt.Limit == 0 {
			sql += ` LIMIT -1`
			if s.d.Name == "postgres" {
				sql = strings.TrimSuffix(sql, ` LIMIT -1`) + ` LIMIT ALL`
			}
		}
		sql += fmt.Sprintf(` OFFSET %d`, opt.Offset)
	}
	var rows []docRow
	if err := s.db.WithContext(ctx).Raw(sql, args...).Scan(&rows).Error; err != nil {
		return nil, s.wrap("list "+string(c), err)
	}
	out := make([]registry.Document, len(rows))
	for i, r := range rows {
		out[i] = r.document(c)
	}
	return out, nil
}

// prefixUpper is the smallest string greater than every string with prefix p.
func prefixUpper(p string) (string, bool) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// DB is the escape hatch to the underlying database (tests read raw rows
// through it). Writing through it bypasses every guarantee of the store.
func (s *Store) DB() *gorm.DB { return s.db }

var _ registry.MetadataUpdater = (*Store)(nil)

// UpdateMetadata is the timestamp compare-and-swap on a version's metadata.
func (s *Store) UpdateMetadata(ctx context.Context, c registry.Collection, ref registry.Ref, expect string, patch map[string]any) (registry.Document, error) {
	if err := docprep.CheckMetadataUpdate(c, ref, patch); err != nil {
		return registry.Document{}, err
	}
	var out registry.Document
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if s.d.LockID != nil {
			if err := s.d.LockID(tx, table(c), ref.ID); err != nil {
				return err
			}
		}
		var rows []docRow
		if err := tx.Raw(`SELECT id, version, type, created_at, doc FROM `+table(c)+` WHERE id = ? AND version = ?`, ref.ID, ref.Version).
			Scan(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return &registry.NotFoundError{Kind: c.Kind(), ID: ref.ID, Version: ref.Version}
		}
		data, err := docprep.PatchMetadata(c, ref, []byte(rows[0].Doc), expect, patch, s.now())
		if err != nil {
			return err
		}
		if err := tx.Exec(`UPDATE `+table(c)+` SET doc = ? WHERE id = ? AND version = ?`, string(data), ref.ID, ref.Version).Error; err != nil {
			return err
		}
		rows[0].Doc = string(data)
		out = rows[0].document(c)
		return nil
	})
	if err != nil {
		return registry.Document{}, s.wrap("update metadata "+string(c)+" "+ref.String(), err)
	}
	return out, nil
}
