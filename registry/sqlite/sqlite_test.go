package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/registry/storetest"
)

func open(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.RunDocumentStore(t, func(t *testing.T) registry.DocumentStore {
		return open(t, filepath.Join(t.TempDir(), "documents.db"))
	})
}

// The stored bytes (database file and its WAL) never hold a secret.
func TestSecretsNotInFile(t *testing.T) {
	dir := t.TempDir()
	s := open(t, filepath.Join(dir, "documents.db"))
	ctx := context.Background()
	body := `{"metadata":{"user_overrides":{"litellm_api_key":"` + storetest.SecretValue + `"}}}`
	if _, err := s.InsertRecord(ctx, registry.TaskInstances, "t-12345678", json.RawMessage(`{"context":`+body+`}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, registry.Tasks, "t", json.RawMessage(body), nil); err != nil {
		t.Fatal(err)
	}
	// A marker proves the scan reads the data that was written.
	if _, err := s.Put(ctx, registry.Tasks, "marker", json.RawMessage(`{"m":"visible-marker-7731"}`), nil); err != nil {
		t.Fatal(err)
	}
	var all []byte
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	if !strings.Contains(string(all), "visible-marker-7731") {
		t.Fatal("scan did not find the marker: the check would be vacuous")
	}
	if strings.Contains(string(all), storetest.SecretValue) {
		t.Fatal("secret value found in the SQLite files")
	}
}

func TestDefaultPathUnderStateRoot(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	s := open(t, "")
	want := filepath.Join(state, "agent-env", "document_store", "documents.db")
	if s.Path() != want {
		t.Fatalf("Path = %s, want %s", s.Path(), want)
	}
	if b, err := os.ReadFile(filepath.Join(state, "agent-env", ".gitignore")); err != nil || string(b) != "*\n" {
		t.Fatalf(".gitignore = %q, %v", b, err)
	}
	fi, err := os.Stat(filepath.Join(state, "agent-env"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state root mode = %v, %v", fi.Mode().Perm(), err)
	}
}

// Reopening sees what was written (the file is the store).
func TestPersistsAcrossOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "documents.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, registry.Envs, "items", json.RawMessage(`{"type":"mcp_server"}`), nil); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	s2 := open(t, path)
	d, err := s2.Put(ctx, registry.Envs, "items", json.RawMessage(`{"type":"mcp_server"}`), nil)
	if err != nil || d.Version != 2 {
		t.Fatalf("second open put = v%d, %v", d.Version, err)
	}
}

// An unusable path is a clear error naming the path.
func TestUnusablePath(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(context.Background(), filepath.Join(blocker, "documents.db"), nil)
	if err == nil || !strings.Contains(err.Error(), blocker) {
		t.Fatalf("Open under a file: %v", err)
	}
	// A file that is not a database.
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a database ", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(context.Background(), junk, nil)
	if err == nil || !strings.Contains(err.Error(), junk) {
		t.Fatalf("Open junk file: %v", err)
	}
	// A closed store reports itself unavailable, not a panic.
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "ok.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if _, err := s.Get(context.Background(), registry.Tasks, registry.Ref{ID: "x"}); err == nil || errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("Get on a closed store: %v", err)
	}
}

func BenchmarkSQLite(b *testing.B) {
	s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "documents.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchmarkDocuments(b, s)
}
