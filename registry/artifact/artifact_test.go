package artifact_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/localimage"
	"github.com/agentenv/agentenv/registry/sqlite"
)

type env struct {
	arts *artifact.Store
	docs registry.DocumentStore
	objs *fsobject.Store
}

func newEnv(t *testing.T) env {
	t.Helper()
	dir := t.TempDir()
	docs, err := sqlite.Open(context.Background(), filepath.Join(dir, "documents.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docs.Close() })
	objs, err := fsobject.New(filepath.Join(dir, "objects"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return env{artifact.New(docs, objs, nil), docs, objs}
}

func read(t *testing.T, rc io.ReadCloser, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

func TestFileVersionsAndKeys(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	f1, err := e.arts.PutFile(ctx, "slack-universe-data", artifact.FileInput{Filename: "slack.json", Body: strings.NewReader(`{"v":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	f2, err := e.arts.PutFile(ctx, "slack-universe-data", artifact.FileInput{Filename: "slack.json", Body: strings.NewReader(`{"v":2}`), Description: "second"})
	if err != nil {
		t.Fatal(err)
	}
	if f1.Version != 1 || f2.Version != 2 || f2.Type != "file" || f2.ContentType != "application/json" || f2.Size != 7 || len(f2.SHA256) != 64 {
		t.Fatalf("files = %+v / %+v", f1, f2)
	}
	// Each put writes under its own upload, never under a version.
	if re := regexp.MustCompile(`/artifacts/file/slack-universe-data/put-\d{8}T\d{6}Z-[0-9a-f]{16}/slack\.json$`); !re.MatchString(f2.S3URL) || f1.S3URL == f2.S3URL {
		t.Fatalf("s3_url %s does not match %s (v1: %s)", f2.S3URL, re, f1.S3URL)
	}
	rc, _, err := e.arts.OpenFile(ctx, registry.Ref{ID: "slack-universe-data", Version: 1})
	if got := read(t, rc, err); got != `{"v":1}` {
		t.Fatalf("v1 bytes = %q", got)
	}
	rc, _, err = e.arts.OpenFile(ctx, registry.Ref{ID: "slack-universe-data"})
	if got := read(t, rc, err); got != `{"v":2}` {
		t.Fatalf("latest bytes = %q", got)
	}
	// @local ids map to the local/<slug>-<hash> segment.
	lf, err := e.arts.PutFile(ctx, "@local/agentenv-framework/hello/greeting", artifact.FileInput{Filename: "hello.txt", Body: strings.NewReader("hello from agent-env\n")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lf.S3URL, "/artifacts/file/local/agentenv-framework-hello-greeting-") {
		t.Fatalf("local id key: %s", lf.S3URL)
	}
}

func TestUniversePinsVersions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.arts.PutFile(ctx, "a", artifact.FileInput{Filename: "a.txt", Body: strings.NewReader("a1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.arts.PutFile(ctx, "b", artifact.FileInput{Filename: "b.txt", Body: strings.NewReader("b1")}); err != nil {
		t.Fatal(err)
	}
	u, err := e.arts.PutUniverse(ctx, "u", map[string]registry.Ref{"a.txt": {ID: "a"}, "sub/b.txt": {ID: "b", Version: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u.Version != 1 || u.FileArtifactRefs["a.txt"] != (registry.Ref{ID: "a", Version: 1}) || u.FileArtifactIDs["sub/b.txt"] != "b" {
		t.Fatalf("universe = %+v", u)
	}
	// A new version of a member does not change the pinned universe.
	if _, err := e.arts.PutFile(ctx, "a", artifact.FileInput{Filename: "a.txt", Body: strings.NewReader("a2")}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	paths, err := e.arts.WriteUniverse(ctx, u.Ref(), out)
	if err != nil || len(paths) != 2 {
		t.Fatalf("WriteUniverse = %v, %v", paths, err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "a.txt")); string(b) != "a1" {
		t.Fatalf("a.txt = %q, want the pinned a1", b)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "sub", "b.txt")); string(b) != "b1" {
		t.Fatalf("sub/b.txt = %q", b)
	}
	// Bad members.
	if _, err := e.arts.PutUniverse(ctx, "u", map[string]registry.Ref{"x": {ID: "missing"}}, nil); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("missing member: %v", err)
	}
	if _, err := e.arts.PutUniverse(ctx, "u", map[string]registry.Ref{"x": {ID: "a", Version: 9}}, nil); !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), "version=9") {
		t.Fatalf("missing member version: %v", err)
	}
	if _, err := e.arts.PutUniverse(ctx, "u", map[string]registry.Ref{"../evil": {ID: "a"}}, nil); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("escaping member name: %v", err)
	}
	if _, err := e.arts.PutUniverse(ctx, "u2", map[string]registry.Ref{"x": {ID: "u"}}, nil); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("universe as member: %v", err)
	}
	if _, err := e.arts.PutUniverse(ctx, "u3", nil, nil); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("empty universe: %v", err)
	}
	// A type change of an id is refused.
	if _, err := e.arts.PutFile(ctx, "u", artifact.FileInput{Filename: "x", Body: strings.NewReader("x")}); !errors.Is(err, registry.ErrConflict) {
		t.Fatalf("file over a universe id: %v", err)
	}
	if _, err := e.arts.GetFile(ctx, registry.Ref{ID: "u"}); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("GetFile of a universe: %v", err)
	}
}

func TestUniverseFromDir(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from agent-env\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "check.sh"), []byte("grep -q hello hello.txt\n"), 0o600)
	id := "@local/agentenv-framework/hello/greeting"
	u, err := e.arts.PutUniverseFromDir(ctx, id, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.FileArtifactRefs) != 2 || u.FileArtifactIDs["check.sh"] != id+"/check.sh" {
		t.Fatalf("universe = %+v", u)
	}
	out := t.TempDir()
	if _, err := e.arts.WriteUniverse(ctx, u.Ref(), out); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "check.sh")); string(b) != "grep -q hello hello.txt\n" {
		t.Fatalf("check.sh = %q", b)
	}
	if _, err := e.arts.PutUniverseFromDir(ctx, "empty", t.TempDir(), nil); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("empty dir: %v", err)
	}
}

// Concurrent puts of one id: every version 1..n, each pointing at its own bytes.
func TestConcurrentPutFile(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.arts.PutFile(ctx, "hot", artifact.FileInput{Filename: "f.txt", Body: strings.NewReader(fmt.Sprintf("writer %d", i)), Description: fmt.Sprint(i)})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for v := 1; v <= n; v++ {
		rc, f, err := e.arts.OpenFile(ctx, registry.Ref{ID: "hot", Version: v})
		if got := read(t, rc, err); got != "writer "+f.Description {
			t.Fatalf("v%d bytes %q belong to another writer than %s", v, got, f.Description)
		}
	}
}

func TestEnvironmentArtifacts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	env1, err := e.arts.PutEnvironment(ctx, "items-data", artifact.EnvironmentInput{EnvironmentName: "items", Filename: "items.json", Body: strings.NewReader(`[]`)})
	if err != nil {
		t.Fatal(err)
	}
	if env1.FileArtifactRef != (registry.Ref{ID: "items-data-file", Version: 1}) || env1.ServiceName != "items" {
		t.Fatalf("environment = %+v", env1)
	}
	env2, err := e.arts.PutEnvironment(ctx, "notes-data", artifact.EnvironmentInput{EnvironmentName: "notes", Filename: "n.json", Body: strings.NewReader(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.arts.PutEnvironmentUniverse(ctx, "world", []registry.Ref{{ID: "items-data"}, env2.Ref()}, map[string]registry.Ref{"readme": {ID: "items-data-file"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(u.EnvironmentArtifactRefs) != 2 || u.EnvironmentArtifactRefs[0].Version != 1 || len(u.ServiceArtifactRefs) != 2 || u.MetadataRefs["readme"].Version != 1 {
		t.Fatalf("universe = %+v", u)
	}
	if _, err := e.arts.PutEnvironmentUniverse(ctx, "dup", []registry.Ref{env1.Ref(), {ID: "items-data"}}, nil, ""); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("two artifacts for one environment: %v", err)
	}
	if _, err := e.arts.PutEnvironment(ctx, "x", artifact.EnvironmentInput{Filename: "x", Body: strings.NewReader("")}); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("missing environment_name: %v", err)
	}
	// Legacy "service" documents read as environments.
	if _, err := e.docs.Put(ctx, registry.Artifacts, "legacy", json.RawMessage(`{"type":"service","service_name":"old","file_artifact_ref":{"id":"items-data-file","version":1}}`), nil); err != nil {
		t.Fatal(err)
	}
	le, err := e.arts.GetEnvironment(ctx, registry.Ref{ID: "legacy"})
	if err != nil || le.EnvironmentName != "old" {
		t.Fatalf("legacy service = %+v, %v", le, err)
	}
}

func TestDockerImage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	images := localimage.New(nil)
	tar := bytes.Repeat([]byte{0x1f, 0x8b, 1, 2}, 256)
	di, err := e.arts.PutDockerImage(ctx, "items__env_image", artifact.DockerImageInput{Tarball: bytes.NewReader(tar), BuildContext: strings.NewReader("ctx"), Platform: "linux/amd64"}, images)
	if err != nil {
		t.Fatal(err)
	}
	if di.ImageName != "localhost:5000/items__env_image:v1" || di.TarGzObjectURL == "" || di.TarGzS3URL != di.TarGzObjectURL || di.BuildContextObjectURL == "" ||
		di.TarGzSize != int64(len(tar)) || len(di.TarGzSHA256) != 64 || di.BuildContextSize != 3 {
		t.Fatalf("docker image = %+v", di)
	}
	rc, _, err := e.arts.OpenImageTarball(ctx, di.Ref())
	if got := read(t, rc, err); got != string(tar) {
		t.Fatal("artifact tarball differs")
	}
	// --image-ref: no tarball, a given name.
	ref, err := e.arts.PutDockerImage(ctx, "a2a-agent-x", artifact.DockerImageInput{ImageName: "localhost:5000/a2a-agent-x:v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.arts.OpenImageTarball(ctx, ref.Ref()); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("tarball of an --image-ref artifact: %v", err)
	}
	if _, err := e.arts.PutDockerImage(ctx, "Bad Name", artifact.DockerImageInput{}, images); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("invalid repository id: %v", err)
	}
}

func TestBadRefs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.arts.GetFile(ctx, registry.Ref{ID: "nope"}); !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), "Artifact nope") {
		t.Fatalf("unknown id: %v", err)
	}
	for _, bad := range []string{"a:0", "a:-1", "a:x", "a:1:2", ":1", ""} {
		if _, err := registry.ParseRef(bad); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("ParseRef(%q): %v", bad, err)
		}
	}
	if _, err := e.arts.PutFile(ctx, "f", artifact.FileInput{Filename: "x"}); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("nil body: %v", err)
	}
	if _, err := e.arts.PutFile(ctx, "f", artifact.FileInput{Filename: "/etc/x", Body: strings.NewReader("")}); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("absolute filename: %v", err)
	}
	// Nothing was half-written by the refused puts.
	if ds, _ := e.arts.List(ctx, nil); len(ds) != 0 {
		t.Errorf("documents after refused puts: %v", ds)
	}
	if objs, _ := e.objs.List(ctx, ""); len(objs) != 0 {
		t.Errorf("objects after refused puts: %v", objs)
	}
}

func TestUniverseBundle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	for i := 0; i < 10; i++ {
		os.WriteFile(filepath.Join(dir, "sub", fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprint(i)), 0o600)
	}
	u, err := e.arts.PutUniverseFromDir(ctx, "bundled", dir, &artifact.UniverseOptions{Bundle: true, Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(u.FileArtifactRefs) != 10 || !strings.Contains(u.BundleS3URL, "artifacts/file_artifact_universe/bundled/put-") ||
		!strings.HasSuffix(u.BundleS3URL, "/bundle.tar.gz") || len(u.BundleSHA256) != 64 || u.BundleSize == 0 {
		t.Fatalf("universe = %+v", u)
	}
	rc, _, err := e.arts.OpenUniverseBundle(ctx, u.Ref())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if want := strings.TrimSuffix(strings.TrimPrefix(h.Name, "sub/f"), ".txt"); string(b) != want {
			t.Fatalf("%s = %q", h.Name, b)
		}
		n++
	}
	if n != 10 {
		t.Fatalf("%d entries", n)
	}
	plain, _ := e.arts.PutUniverse(ctx, "plain", map[string]registry.Ref{"a": u.FileArtifactRefs["sub/f1.txt"]}, nil)
	if _, _, err := e.arts.OpenUniverseBundle(ctx, plain.Ref()); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("bundle of a plain universe: %v", err)
	}
}
