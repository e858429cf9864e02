package ociregistry_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/agentenv/agentenv/registry/ociregistry"
)

// imageTarball is a docker-save tarball of a small random image.
func imageTarball(t *testing.T) ociregistry.Opener {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("localhost:5000/x:v1")
	var buf bytes.Buffer
	if err := tarball.Write(tag, img, &buf); err != nil {
		t.Fatal(err)
	}
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil }
}

// basicAuth refuses every request without the credentials, counting the
// requests that carried them.
func basicAuth(user, pass string, next http.Handler, ok *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, has := r.BasicAuth()
		if !has || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		ok.Add(1)
		next.ServeHTTP(w, r)
	})
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// storageDir is a registry folder as Start prepares it (Handler expects
// its blobs and manifests folders).
func storageDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"blobs", "manifests"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestPushBasicAuth: a registry wanting basic auth refuses an anonymous
// push, naming the status, and takes one with the credentials; the
// password is not in the error.
func TestPushBasicAuth(t *testing.T) {
	var authed atomic.Int32
	srv := httptest.NewServer(basicAuth("robot", "pw-123", ociregistry.Handler(storageDir(t), quiet()), &authed))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	open := imageTarball(t)
	ctx := context.Background()
	_, err := ociregistry.PushTarball(ctx, open, host+"/x:v1", nil)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("anonymous push: %v, want HTTP 401", err)
	}
	_, err = ociregistry.PushTarball(ctx, open, host+"/x:v1", &ociregistry.PushOptions{Username: "robot", Password: "wrong"})
	if err == nil || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("push with a wrong password: %v, want an error without the password", err)
	}
	d, err := ociregistry.PushTarball(ctx, open, host+"/x:v1", &ociregistry.PushOptions{Username: "robot", Password: "pw-123"})
	if err != nil || !strings.HasPrefix(d, "sha256:") {
		t.Fatalf("push with credentials: %q, %v", d, err)
	}
	if authed.Load() == 0 {
		t.Error("no request carried the credentials")
	}
}

// TestPushHTTPS: the scheme is https unless the host is loopback or the
// options say otherwise.
func TestPushHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(ociregistry.Handler(storageDir(t), quiet()))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	open := imageTarball(t)
	ctx := context.Background()
	// Loopback defaults to plain HTTP, which a TLS server refuses.
	if _, err := ociregistry.PushTarball(ctx, open, host+"/x:v1", &ociregistry.PushOptions{Client: srv.Client()}); err == nil {
		t.Fatal("plain HTTP to a TLS registry succeeded")
	}
	d, err := ociregistry.PushTarball(ctx, open, host+"/x:v1", &ociregistry.PushOptions{Scheme: "https", Client: srv.Client()})
	if err != nil || !strings.HasPrefix(d, "sha256:") {
		t.Fatalf("https push: %q, %v", d, err)
	}
	if _, err := ociregistry.PushTarball(ctx, open, host+"/x:v1", &ociregistry.PushOptions{Scheme: "ftp"}); err == nil || !strings.Contains(err.Error(), "scheme") {
		t.Errorf("scheme ftp: %v", err)
	}
}

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost:5000": true, "LOCALHOST": true, "127.0.0.1:5000": true, "127.3.2.1": true, "[::1]:5000": true, "::1": true,
		"registry.example:5000": false, "10.0.0.1:5000": false, "ghcr.io": false, "localhost.example": false,
	} {
		if got := ociregistry.IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
