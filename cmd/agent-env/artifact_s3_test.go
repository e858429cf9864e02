package main

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// TestArtifactOnS3 puts and gets a file artifact through the CLI with a
// config selecting the s3 object store (gofakes3 on loopback), credentials
// from the secret store.
func TestArtifactOnS3(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	be := s3mem.New()
	if err := be.CreateBucket("artifacts"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	defer srv.Close()
	const secret = "cli-s3-secret-value"
	secrets := writeFile(t, filepath.Join(dir, "secrets.json"), `{"S3_KEY_ID":"AKIDCLI","S3_SECRET":"`+secret+`"}`)
	config := func(bucket string) string {
		return writeFile(t, filepath.Join(dir, bucket+".toml"), `
[stores.secret.config]
file_path = "`+secrets+`"
[stores.object]
backend = "s3"
[stores.object.config]
url = "s3://`+bucket+`/cli?endpoint=`+srv.URL+`"
access_key_id = "secret:S3_KEY_ID"
secret_access_key = "secret:S3_SECRET"
`)
	}
	t.Setenv("AGENT_ENV_CONFIG", config("artifacts"))
	f := writeFile(t, filepath.Join(dir, "notes.txt"), "stored in a bucket\n")
	code, out, stderr := c.run("artifact", "file", "put", f, "--id", "notes", "--json")
	var doc struct {
		S3URL string `json:"s3_url"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || !strings.HasPrefix(doc.S3URL, "s3://artifacts/cli/") {
		t.Fatalf("put: exit %d\n%s\n%s", code, out, stderr)
	}
	outDir := filepath.Join(dir, "out")
	code, out, stderr = c.run("artifact", "file", "get", "--id", "notes", "--output-dir", outDir)
	if code != 0 || string(mustRead(t, filepath.Join(outDir, "notes.txt"))) != "stored in a bucket\n" {
		t.Fatalf("get: exit %d\n%s\n%s", code, out, stderr)
	}
	// A missing bucket fails the command at once, naming it, not the secret.
	t.Setenv("AGENT_ENV_CONFIG", config("missing"))
	code, _, stderr = c.run("artifact", "file", "put", f, "--id", "notes2")
	if code != 1 || !strings.Contains(stderr, "s3://missing/cli/") || strings.Contains(stderr, secret) {
		t.Fatalf("missing bucket: exit %d %q", code, stderr)
	}
}
