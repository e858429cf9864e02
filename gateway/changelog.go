package gateway

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ChangelogReader reads the service database's changelog id.
// Read returns nil when no id is available; it never fails a call.
type ChangelogReader interface {
	Read(ctx context.Context) *int64
}

// noChangelog is used without SERVICE_DB_URL: every changelog_id is null.
type noChangelog struct{}

func (noChangelog) Read(context.Context) *int64 { return nil }

// pgChangelog reads SELECT MAX(id) FROM public._changelog on a pooled
// connection. The pool is created lazily on first use and recreated after
// an error, at most once per retryEvery, so a database problem never
// crashes startup or blocks calls for long.
type pgChangelog struct {
	url        string
	log        *slog.Logger
	timeout    time.Duration
	retryEvery time.Duration

	mu       sync.Mutex
	pool     *pgxpool.Pool
	lastFail time.Time
}

func newPGChangelog(url string, log *slog.Logger) *pgChangelog {
	return &pgChangelog{url: url, log: log, timeout: 2 * time.Second, retryEvery: 5 * time.Second}
}

func (p *pgChangelog) getPool(ctx context.Context) *pgxpool.Pool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pool != nil {
		return p.pool
	}
	if !p.lastFail.IsZero() && time.Since(p.lastFail) < p.retryEvery {
		return nil
	}
	cfg, err := pgxpool.ParseConfig(p.url)
	if err != nil {
		p.lastFail = time.Now()
		p.log.Error("SERVICE_DB_URL is not a valid Postgres URL; changelog ids are null", "err", err)
		return nil
	}
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		p.lastFail = time.Now()
		p.log.Warn("service database unavailable; changelog ids are null until it reconnects", "err", err)
		return nil
	}
	p.pool = pool
	return pool
}

// Read returns the current maximum changelog id, or nil on any error (and
// drops the pool so the next read reconnects).
func (p *pgChangelog) Read(ctx context.Context) *int64 {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.timeout)
	defer cancel()
	pool := p.getPool(ctx)
	if pool == nil {
		return nil
	}
	var id *int64
	if err := pool.QueryRow(ctx, "SELECT MAX(id) FROM public._changelog").Scan(&id); err != nil {
		p.log.Warn("changelog read failed; reconnecting", "err", err)
		p.mu.Lock()
		if p.pool == pool {
			p.pool = nil
			p.lastFail = time.Now()
		}
		p.mu.Unlock()
		go pool.Close()
		return nil
	}
	return id
}

func (p *pgChangelog) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pool != nil {
		p.pool.Close()
		p.pool = nil
	}
}
