package stores_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/memory"
	"github.com/agentenv/agentenv/registry/stores"
)

func load(t *testing.T, body string, env map[string]string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(&config.Options{Path: p, Getenv: func(k string) string { return env[k] }, Environ: func() []string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDefaults(t *testing.T) {
	root := t.TempDir()
	set, err := stores.Open(context.Background(), nil, &stores.Options{StateRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if set.Local != set.Documents {
		t.Fatal("default config: @local and default documents should be one SQLite store")
	}
	if _, err := os.Stat(filepath.Join(root, "document_store", "documents.db")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f, err := set.ArtifactsFor("@local/p/b/greeting").PutFile(ctx, "@local/p/b/greeting", artifactInput("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.S3URL, "file://"+filepath.Join(root, "object_store")) {
		t.Fatalf("object url %s outside the state root", f.S3URL)
	}
	// The store id: made on first open, kept in the state root, the end
	// of every image tag; another state root has another.
	id := set.StoreID()
	if b, err := os.ReadFile(filepath.Join(root, registry.StoreIDFile)); err != nil || strings.TrimSpace(string(b)) != id || len(id) != 16 {
		t.Fatalf("store id %q, file %q, %v", id, b, err)
	}
	ref, _ := set.Images.Ref("items__env_image", 1)
	if ref != "localhost:5000/items__env_image:v1-"+id || set.Images.StoreID() != id {
		t.Fatalf("image ref %s (store id %s)", ref, id)
	}
	again, err := stores.Open(ctx, nil, &stores.Options{StateRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	other, err := stores.Open(ctx, nil, &stores.Options{StateRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if again.StoreID() != id || other.StoreID() == id {
		t.Fatalf("store ids: %s, reopened %s, other root %s", id, again.StoreID(), other.StoreID())
	}
}

// With a document path of its own, @local documents stay in the state
// root's SQLite file.
func TestLocalRouting(t *testing.T) {
	root := t.TempDir()
	other := filepath.Join(t.TempDir(), "shared.db")
	cfg := load(t, "[stores.document]\nimpl = \"sqlite\"\n[stores.document.config]\npath = \""+other+"\"\n", nil)
	set, err := stores.Open(context.Background(), cfg, &stores.Options{StateRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	ctx := context.Background()
	if set.DocumentsFor("@local/x") == set.DocumentsFor("x") {
		t.Fatal("no routing")
	}
	if _, err := set.DocumentsFor("@local/x").Put(ctx, registry.Tasks, "@local/x", json.RawMessage(`{"type":"task"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Documents.Get(ctx, registry.Tasks, registry.Ref{ID: "@local/x"}); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("@local document reached the configured store: %v", err)
	}
}

func TestSecretReferences(t *testing.T) {
	root := t.TempDir()
	secrets := filepath.Join(t.TempDir(), "secrets.yaml")
	os.WriteFile(secrets, []byte("OBJ_ROOT: "+filepath.Join(root, "objs")+"\n"), 0o600)
	cfg := load(t, `
[stores.secret.config]
file_path = "`+secrets+`"
use_env = false
[stores.object.config]
root = "secret:OBJ_ROOT"
`, nil)
	set, err := stores.Open(context.Background(), cfg, &stores.Options{StateRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	info, err := registry.PutBytes(context.Background(), set.Objects, "k", []byte("v"), nil)
	if err != nil || !strings.Contains(info.URL, "/objs/k") {
		t.Fatalf("object root from a secret: %+v, %v", info, err)
	}
	if v, err := set.Resolve(context.Background(), "secret:NOPE?d"); err != nil || v != "d" {
		t.Fatalf("Resolve default = %q, %v", v, err)
	}

	bad := load(t, "[stores.object.config]\nroot = \"secret:MISSING_ROOT\"\n", nil)
	_, err = stores.Open(context.Background(), bad, &stores.Options{StateRoot: t.TempDir()})
	if !errors.Is(err, registry.ErrUnresolved) || !strings.Contains(err.Error(), "stores.object.config.root") || !strings.Contains(err.Error(), "secret:MISSING_ROOT") {
		t.Fatalf("unresolvable reference: %v", err)
	}
	missing := load(t, "[stores.secret.config]\nfile_path = \"/nonexistent/secrets.json\"\n", nil)
	if _, err := stores.Open(context.Background(), missing, &stores.Options{StateRoot: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "/nonexistent/secrets.json") {
		t.Fatalf("missing secret file: %v", err)
	}
}

// A PostgreSQL server that is down: a clear error, nothing left open.
func TestPostgresDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	cfg := load(t, "[stores.document]\nimpl = \"postgres\"\n[stores.document.config]\ndsn = \"env:PG_DSN\"\n",
		map[string]string{})
	t.Setenv("PG_DSN", "host=127.0.0.1 port="+port+" user=u password=pw-secret dbname=d sslmode=disable connect_timeout=5")
	_, err = stores.Open(context.Background(), cfg, &stores.Options{StateRoot: t.TempDir()})
	if !errors.Is(err, registry.ErrUnavailable) || !strings.Contains(err.Error(), "127.0.0.1:"+port) || strings.Contains(err.Error(), "pw-secret") {
		t.Fatalf("postgres down: %v", err)
	}
}

// With PostgreSQL configured, @local documents go to the local SQLite file.
func TestPostgresWithLocalSplit(t *testing.T) {
	dsn := os.Getenv("AGENTENV_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("AGENTENV_TEST_POSTGRES_DSN is unset but CI=true")
		}
		t.Skip("AGENTENV_TEST_POSTGRES_DSN unset")
	}
	schema := "agentenv_stores_" + registry.RandomSuffix(8)
	t.Setenv("PG_DSN", dsn)
	cfg := load(t, "[stores.document]\nimpl = \"postgres\"\n[stores.document.config]\ndsn = \"env:PG_DSN\"\nschema = \""+schema+"\"\n", nil)
	root := t.TempDir()
	set, err := stores.Open(context.Background(), cfg, &stores.Options{StateRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		set.Close()
		dropSchema(t, dsn, schema)
	}()
	ctx := context.Background()
	if set.Local == set.Documents {
		t.Fatal("postgres config: @local must be a separate SQLite store")
	}
	if _, err := set.DocumentsFor("@local/a").Put(ctx, registry.Tasks, "@local/a", json.RawMessage(`{"type":"task"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := set.DocumentsFor("b").Put(ctx, registry.Tasks, "b", json.RawMessage(`{"type":"task"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Documents.Get(ctx, registry.Tasks, registry.Ref{ID: "@local/a"}); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("@local document reached PostgreSQL: %v", err)
	}
	if _, err := set.Local.Get(ctx, registry.Tasks, registry.Ref{ID: "b"}); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("bare document reached the local store: %v", err)
	}
}

// A custom registry: a test (or a plugin, later) adds its own backend.
func TestCustomRegistry(t *testing.T) {
	r := stores.Builtin()
	opened := false
	r.Register("store.document.fake", stores.DocumentFactory(func(ctx context.Context, env *stores.Env) (registry.DocumentStore, error) {
		opened = true
		return memory.New(), nil
	}))
	cfg := config.Defaults()
	cfg.Stores.Document.Impl = "fake"
	set, err := stores.Open(context.Background(), cfg, &stores.Options{StateRoot: t.TempDir(), Registry: r})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if !opened || set.Local == set.Documents {
		t.Fatalf("custom factory opened=%v, local split=%v", opened, set.Local != set.Documents)
	}
	cfg.Stores.Document.Impl = "nope"
	if _, err := stores.Open(context.Background(), cfg, &stores.Options{StateRoot: t.TempDir(), Registry: r}); !errors.Is(err, registry.ErrInvalid) || !strings.Contains(err.Error(), "fake") {
		t.Fatalf("unknown impl: %v", err)
	}
	for _, bad := range []func(){
		func() { r.Register("store.document.fake", stores.DocumentFactory(nil)) },
		func() { r.Register("document.fake2", stores.DocumentFactory(nil)) },
		func() { r.Register("store.object.x", stores.DocumentFactory(nil)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("bad registration did not panic")
				}
			}()
			bad()
		}()
	}
}
