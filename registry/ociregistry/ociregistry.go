// Package ociregistry runs a local OCI registry in-process
// (go-containerregistry's registry with blobs on disk), for platforms that
// pull images instead of loading tarballs. `agent-env registry serve` is a
// thin wrapper over Serve.
//
// The library keeps manifests in memory; this package records every
// manifest PUT under <dir>/manifests/ and replays them when a server starts
// on the same dir, so images pushed before a restart are still there.
//
// The default address is 127.0.0.1:5000: the Docker engine treats
// 127.0.0.0/8 as an insecure registry, so `docker push localhost:5000/...`
// works without TLS.
//
//	err := ociregistry.Serve(ctx, "127.0.0.1:5000", filepath.Join(stateRoot, "oci_registry"))
package ociregistry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
)

// DefaultAddr is where `agent-env registry serve` listens.
const DefaultAddr = "127.0.0.1:5000"

// Options tunes Start. A nil *Options means defaults.
type Options struct {
	Logger *slog.Logger // nil = slog.Default()
}

// Server is a running registry.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan error
	dir  string

	closeOnce sync.Once
	closeErr  error
}

// Start listens on addr ("" = DefaultAddr; "127.0.0.1:0" for a free port)
// and serves a registry keeping blobs and manifests under dir.
func Start(addr, dir string, o *Options) (*Server, error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if addr == "" {
		addr = DefaultAddr
	}
	if dir == "" {
		return nil, errors.New("ociregistry: empty storage directory")
	}
	for _, d := range []string{filepath.Join(dir, "blobs"), filepath.Join(dir, "manifests")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("ociregistry: storage %s: %w", dir, err)
		}
	}
	h := Handler(dir, opt.Logger)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ociregistry: listen %s: %w", addr, err)
	}
	s := &Server{ln: ln, dir: dir, done: make(chan error, 1),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}}
	go func() { s.done <- s.srv.Serve(ln) }()
	opt.Logger.Info("OCI registry listening", "addr", ln.Addr().String(), "dir", dir)
	return s, nil
}

// Addr is the listening address ("127.0.0.1:5000").
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, waiting for in-flight requests up to ctx.
// Calling it again returns the first result.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		err := s.srv.Shutdown(ctx)
		if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		s.closeErr = err
	})
	return s.closeErr
}

// Serve runs a registry on addr until ctx ends.
func Serve(ctx context.Context, addr, dir string) error {
	s, err := Start(addr, dir, nil)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return s.Close(sctx)
	case err := <-s.done:
		s.done <- err // let Close (if any) see it
		return err
	}
}

// Handler is the registry as an http.Handler over dir (blobs on disk,
// manifests recorded and replayed).
func Handler(dir string, logger *slog.Logger) http.Handler {
	inner := ggcr.New(
		ggcr.WithBlobHandler(ggcr.NewDiskBlobHandler(filepath.Join(dir, "blobs"))),
		ggcr.Logger(log.New(io.Discard, "", 0)),
	)
	m := &manifests{dir: filepath.Join(dir, "manifests"), inner: inner, log: logger}
	m.replay()
	return m
}

// manifests records manifest PUTs so they survive a restart.
type manifests struct {
	dir   string
	inner http.Handler
	log   *slog.Logger
	mu    sync.Mutex
	seq   int
}

type recorded struct {
	Path        string `json:"path"` // /v2/<repo>/manifests/<ref>
	ContentType string `json:"content_type"`
	Body        []byte `json:"body"`
	At          int64  `json:"at"` // unix nanos: replay order
}

func isManifestPath(p string) bool {
	return strings.HasPrefix(p, "/v2/") && strings.Contains(p, "/manifests/")
}

func (m *manifests) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut || !isManifestPath(r.URL.Path) {
		m.inner.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 8<<20))
	if err != nil {
		http.Error(w, "manifest too large or unreadable", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	m.inner.ServeHTTP(rec, r)
	if rec.code/100 == 2 {
		m.save(recorded{Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"), Body: body, At: time.Now().UnixNano()})
	}
}

func (m *manifests) save(rec recorded) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sum := sha256.Sum256([]byte(rec.Path))
	b, _ := json.Marshal(rec)
	p := filepath.Join(m.dir, hex.EncodeToString(sum[:16])+".json")
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err == nil {
		err = os.Rename(tmp, p)
		if err != nil {
			m.log.Warn("OCI registry: cannot persist manifest", "path", rec.Path, "err", err)
		}
	}
}

func (m *manifests) replay() {
	entries, _ := os.ReadDir(m.dir)
	var recs []recorded
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(m.dir, e.Name()))
		var rec recorded
		if err != nil || json.Unmarshal(b, &rec) != nil || !isManifestPath(rec.Path) {
			m.log.Warn("OCI registry: skipping unreadable manifest record", "file", e.Name())
			continue
		}
		recs = append(recs, rec)
	}
	// Indexes reference manifests: replay oldest first.
	for i := 1; i < len(recs); i++ {
		for j := i; j > 0 && recs[j].At < recs[j-1].At; j-- {
			recs[j], recs[j-1] = recs[j-1], recs[j]
		}
	}
	for _, rec := range recs {
		req := httptest.NewRequest(http.MethodPut, rec.Path, bytes.NewReader(rec.Body))
		req.Header.Set("Content-Type", rec.ContentType)
		w := httptest.NewRecorder()
		m.inner.ServeHTTP(w, req)
		if w.Code/100 != 2 {
			m.log.Warn("OCI registry: manifest not restored", "path", rec.Path, "status", w.Code)
		}
	}
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int)        { s.code = code; s.ResponseWriter.WriteHeader(code) }
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
