package stores_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/stores"
)

const s3TestSecret = "s3cr3t-from-the-secret-store"

// s3Config starts gofakes3 on loopback with bucket "artifacts" and returns
// a config selecting it, credentials in a secrets file.
func s3Config(t *testing.T) string {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket("artifacts"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	secrets := filepath.Join(t.TempDir(), "secrets.json")
	if err := os.WriteFile(secrets, []byte(`{"S3_KEY_ID":"AKIDTEST","S3_SECRET":"`+s3TestSecret+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return `
[stores.secret.config]
file_path = "` + secrets + `"

[stores.object]
backend = "s3"
[stores.object.config]
url = "s3://artifacts/team-a?endpoint=` + srv.URL + `"
access_key_id = "secret:S3_KEY_ID"
secret_access_key = "secret:S3_SECRET"
part_size_mib = 5
`
}

func TestS3ObjectStoreFromConfig(t *testing.T) {
	ctx := context.Background()
	set, err := stores.Open(ctx, load(t, s3Config(t), nil), &stores.Options{StateRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	f, err := set.ArtifactsFor("team/greeting").PutFile(ctx, "team/greeting", artifactInput("hello over s3"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.S3URL, "s3://artifacts/team-a/") {
		t.Fatalf("artifact object URL %s, want s3://artifacts/team-a/...", f.S3URL)
	}
	rc, _, err := registry.OpenURL(ctx, set.Objects, f.S3URL)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); string(b) != "hello over s3" {
		t.Fatalf("object body %q", b)
	}
}

func TestS3ObjectStoreBadConfig(t *testing.T) {
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noEnv := func(string) string { return "" }
	for body, key := range map[string]string{
		"[stores.object]\nbackend = \"s3\"\n": "stores.object.config.url",
		"[stores.object]\nbackend = \"s3\"\n[stores.object.config]\nurl = \"s3://b\"\nsecret_access_key = \"" + s3TestSecret + "\"\n": "stores.object.config.secret_access_key",
		"[stores.object]\nbackend = \"s3\"\n[stores.object.config]\nurl = \"s3://b\"\npart_size_mib = 1\n":                            "stores.object.config.part_size_mib",
	} {
		_, err := config.Load(&config.Options{Path: write(body), Getenv: noEnv, Environ: func() []string { return nil }})
		if err == nil || !strings.Contains(err.Error(), key) || strings.Contains(err.Error(), s3TestSecret) {
			t.Errorf("config %q: %v, want an error naming %s", body, err, key)
		}
	}
	// A URL the store refuses names the config key at open.
	cfg := load(t, "[stores.object]\nimpl = \"s3\"\n[stores.object.config]\nurl = \"gs://b\"\n", nil)
	_, err := stores.Open(context.Background(), cfg, &stores.Options{StateRoot: t.TempDir()})
	if !errors.Is(err, registry.ErrInvalid) || !strings.Contains(err.Error(), "stores.object.config.url") {
		t.Fatalf("wrong scheme: %v", err)
	}
	// An unreachable bucket fails when the stores open.
	cfg = load(t, strings.Replace(s3Config(t), "s3://artifacts/", "s3://missing-bucket/", 1), nil)
	_, err = stores.Open(context.Background(), cfg, &stores.Options{StateRoot: t.TempDir()})
	if !errors.Is(err, registry.ErrUnavailable) || !strings.Contains(err.Error(), "s3://missing-bucket/") || strings.Contains(err.Error(), s3TestSecret) {
		t.Fatalf("missing bucket: %v", err)
	}
}
