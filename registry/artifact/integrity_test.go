package artifact_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
)

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// replaceObject swaps the stored bytes behind url (what a disk error, a
// stray writer or the old layout's race leaves).
func replaceObject(t *testing.T, e env, url string, b []byte) {
	t.Helper()
	key, err := e.objs.KeyOf(url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.PutBytes(context.Background(), e.objs, key, b, &registry.ObjectPutOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
}

func wantCorrupt(t *testing.T, err error, ref registry.Ref, name string, want, got []byte) {
	t.Helper()
	var ce *artifact.CorruptError
	if !errors.Is(err, registry.ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *CorruptError (ErrCorrupt)", err)
	}
	if ce.Ref != ref || ce.Name != name || ce.WantSHA256 != sha(want) || ce.GotSHA256 != sha(got) ||
		ce.WantSize != int64(len(want)) || ce.GotSize != int64(len(got)) {
		t.Fatalf("CorruptError = %+v", ce)
	}
	for _, s := range []string{ref.String(), sha(want), sha(got)} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not name %s", err, s)
		}
	}
}

// Bytes that do not match the document's sha256 are never handed out:
// OpenFile's reader fails on the read that ends them, WriteFile leaves no
// file, and a size mismatch fails OpenFile itself.
func TestCorruptObjectRefused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	good := []byte("the right bytes\n")
	f, err := e.arts.PutFile(ctx, "data", artifact.FileInput{Filename: "d.txt", Body: bytes.NewReader(good)})
	if err != nil {
		t.Fatal(err)
	}
	bad := []byte("the wrong bytes\n") // same size
	replaceObject(t, e, f.S3URL, bad)

	rc, _, err := e.arts.OpenFile(ctx, f.Ref())
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, rc)
	rc.Close()
	wantCorrupt(t, err, f.Ref(), "d.txt", good, bad)

	out := t.TempDir()
	_, err = e.arts.WriteFile(ctx, f.Ref(), out)
	wantCorrupt(t, err, f.Ref(), "d.txt", good, bad)
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("WriteFile of corrupt bytes left %d entries", len(entries))
	}
	if _, err := e.arts.PutUniverse(ctx, "u", map[string]registry.Ref{"d.txt": f.Ref()}, &artifact.UniverseOptions{Bundle: true}); !errors.Is(err, registry.ErrCorrupt) {
		t.Fatalf("bundling a corrupt member: %v", err)
	}

	longer := []byte("the wrong bytes, and more of them\n")
	replaceObject(t, e, f.S3URL, longer)
	_, _, err = e.arts.OpenFile(ctx, f.Ref())
	wantCorrupt(t, err, f.Ref(), "d.txt", good, longer)

	// The image tarball is checked the same way.
	tar := []byte("tarball bytes")
	di, err := e.arts.PutDockerImage(ctx, "img", artifact.DockerImageInput{ImageName: "localhost:5000/img:v1", Tarball: bytes.NewReader(tar)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	replaceObject(t, e, di.TarGzObjectURL, []byte("tarball BYTES"))
	rc, _, err = e.arts.OpenImageTarball(ctx, di.Ref())
	if err == nil {
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
	}
	wantCorrupt(t, err, di.Ref(), "image.tar.gz", tar, []byte("tarball BYTES"))
}

// Objects written by older builds (artifacts/<type>/<id>/<version>/<name>)
// still read, verified when their document has a digest and as they are
// when it has none.
func TestLegacyLayoutReads(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	body := []byte(`{"items":[]}`)
	for _, c := range []struct {
		id     string
		digest bool
	}{{"old-with-digest", true}, {"old-without-digest", false}} {
		key := registry.ArtifactKey("", "file", c.id, 1, "data/items.json")
		info, err := registry.PutBytes(ctx, e.objs, key, body, nil)
		if err != nil {
			t.Fatal(err)
		}
		doc := map[string]any{"type": "file", "filename": "data/items.json", "content_type": "application/json", "s3_url": info.URL}
		if c.digest {
			doc["size_bytes"], doc["sha256"] = len(body), sha(body)
		}
		raw, _ := json.Marshal(doc)
		if _, err := e.docs.Put(ctx, registry.Artifacts, c.id, raw, nil); err != nil {
			t.Fatal(err)
		}
		rc, _, err := e.arts.OpenFile(ctx, registry.Ref{ID: c.id, Version: 1})
		if got := read(t, rc, err); got != string(body) {
			t.Fatalf("%s: %q", c.id, got)
		}
		p, err := e.arts.WriteFile(ctx, registry.Ref{ID: c.id}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); !bytes.Equal(b, body) {
			t.Fatalf("%s written: %q", c.id, b)
		}
		// A new version goes to the new layout beside the old one.
		f, err := e.arts.PutFile(ctx, c.id, artifact.FileInput{Filename: "data/items.json", Body: strings.NewReader("[]")})
		if err != nil || f.Version != 2 || !strings.Contains(f.S3URL, "/"+c.id+"/put-") {
			t.Fatalf("put after a legacy version = %+v, %v", f, err)
		}
	}
}

// failingDocs refuses every artifact document put as unavailable.
type failingDocs struct{ registry.DocumentStore }

func (failingDocs) Put(context.Context, registry.Collection, string, json.RawMessage, *registry.PutOptions) (registry.Document, error) {
	return registry.Document{}, registry.ErrUnavailable
}

// A put that cannot publish removes the bytes it wrote.
func TestUnpublishedPutLeavesNoObjects(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	arts := artifact.New(failingDocs{e.docs}, e.objs, nil)
	if _, err := arts.PutFile(ctx, "x", artifact.FileInput{Filename: "x.txt", Body: strings.NewReader("x")}); !errors.Is(err, registry.ErrUnavailable) {
		t.Fatalf("put = %v", err)
	}
	if objs, _ := e.objs.List(ctx, ""); len(objs) != 0 {
		t.Fatalf("objects left by a failed put: %v", objs)
	}
}

// CollectOrphans removes only unpublished upload objects older than the
// orphan age: never a published one, a young one (a writer may be about
// to publish it) or one outside the upload layout.
func TestCollectOrphans(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	arts := artifact.New(e.docs, e.objs, &artifact.Options{OrphanAge: time.Hour})
	f, err := arts.PutFile(ctx, "kept", artifact.FileInput{Filename: "k.txt", Body: strings.NewReader("published")})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old := "put-" + now.Add(-2*time.Hour).UTC().Format("20060102T150405Z") + "-0123456789abcdef"
	young := "put-" + now.Add(80*time.Minute).UTC().Format("20060102T150405Z") + "-0123456789abcdef"
	orphan := arts.Key("file", "crashed", old, "c.txt")
	fresh := arts.Key("file", "crashed", young, "c.txt")
	legacy := registry.ArtifactKey("", "file", "crashed", 1, "c.txt")
	for _, k := range []string{orphan, fresh, legacy} {
		if _, err := registry.PutBytes(ctx, e.objs, k, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	// A local store beside the main one keeps its own objects alive.
	localDocs := newEnv(t).docs
	local := artifact.New(localDocs, e.objs, nil)
	lf, err := local.PutFile(ctx, "@local/pkg/x", artifact.FileInput{Filename: "l.txt", Body: strings.NewReader("local")})
	if err != nil {
		t.Fatal(err)
	}
	// 90 minutes on, the published uploads are old too, and "young" is 10 minutes old.
	later := func() time.Time { return now.Add(90 * time.Minute) }
	res, err := arts.CollectOrphans(ctx, &artifact.CollectOptions{Also: []registry.DocumentStore{localDocs}, Now: later, DryRun: true})
	if err != nil || len(res.Removed) != 1 || res.Removed[0] != orphan {
		t.Fatalf("dry run = %+v, %v", res, err)
	}
	if ok, _ := e.objs.Exists(ctx, orphan); !ok {
		t.Fatal("a dry run removed an object")
	}
	res, err = arts.CollectOrphans(ctx, &artifact.CollectOptions{Also: []registry.DocumentStore{localDocs}, Now: later})
	if err != nil || len(res.Removed) != 1 || res.Removed[0] != orphan {
		t.Fatalf("collect = %+v, %v", res, err)
	}
	for _, k := range []string{orphan} {
		if ok, _ := e.objs.Exists(ctx, k); ok {
			t.Errorf("orphan %s survived", k)
		}
	}
	for _, k := range []string{fresh, legacy} {
		if ok, _ := e.objs.Exists(ctx, k); !ok {
			t.Errorf("%s was collected", k)
		}
	}
	for _, ref := range []registry.Ref{f.Ref(), lf.Ref()} {
		a := arts
		if ref == lf.Ref() {
			a = local
		}
		rc, _, err := a.OpenFile(ctx, ref)
		read(t, rc, err)
	}
	if _, err := os.Stat(filepath.Join(e.objs.Root(), filepath.FromSlash(legacy))); err != nil {
		t.Fatal(err)
	}
}
