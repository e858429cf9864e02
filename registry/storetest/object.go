package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/agentenv/agentenv/registry"
)

// ObjectFactory returns an empty store for one subtest.
type ObjectFactory func(t *testing.T) registry.ObjectStore

// RunObjectStore runs the ObjectStore conformance suite.
func RunObjectStore(t *testing.T, newStore ObjectFactory) {
	t.Run("RoundTrip", func(t *testing.T) { testObjRoundTrip(t, newStore(t)) })
	t.Run("WriteOnce", func(t *testing.T) { testObjWriteOnce(t, newStore(t)) })
	t.Run("InvalidKeys", func(t *testing.T) { testObjInvalidKeys(t, newStore(t)) })
	t.Run("NotFound", func(t *testing.T) { testObjNotFound(t, newStore(t)) })
	t.Run("Delete", func(t *testing.T) { testObjDelete(t, newStore(t)) })
	t.Run("List", func(t *testing.T) { testObjList(t, newStore(t)) })
	t.Run("URLs", func(t *testing.T) { testObjURLs(t, newStore(t)) })
	t.Run("InterruptedWriter", func(t *testing.T) { testObjInterrupted(t, newStore(t)) })
	t.Run("ConcurrentPutsOneKey", func(t *testing.T) { testObjConcurrent(t, newStore(t)) })
}

func testObjRoundTrip(t *testing.T, s registry.ObjectStore) {
	ctx := context.Background()
	key := "artifacts/file/hello/1/hello.txt"
	body := []byte("hello from agent-env\n")
	info, err := registry.PutBytes(ctx, s, key, body, &registry.ObjectPutOptions{ContentType: "text/plain; charset=utf-8"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Key != key || info.Size != int64(len(body)) || info.ContentType != "text/plain; charset=utf-8" || info.URL == "" {
		t.Fatalf("Put info = %+v", info)
	}
	got, err := registry.GetBytes(ctx, s, key)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("GetBytes = %q, %v", got, err)
	}
	st, err := s.Stat(ctx, key)
	if err != nil || st.Size != int64(len(body)) || st.ContentType != info.ContentType || st.LastModified.IsZero() {
		t.Fatalf("Stat = %+v, %v", st, err)
	}
	if ok, err := s.Exists(ctx, key); !ok || err != nil {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	// Without a content type one is guessed from the name.
	info, err = registry.PutBytes(ctx, s, "artifacts/docker_image/x/1/image.tar.gz", []byte{0x1f, 0x8b}, nil)
	if err != nil || info.ContentType != "application/gzip" {
		t.Fatalf("guessed content type = %q, %v", info.ContentType, err)
	}
	// Empty objects are objects.
	if _, err := registry.PutBytes(ctx, s, "empty", nil, nil); err != nil {
		t.Fatal(err)
	}
	if b, err := registry.GetBytes(ctx, s, "empty"); err != nil || len(b) != 0 {
		t.Fatalf("empty object = %q, %v", b, err)
	}
	// A 1 MiB object round-trips byte for byte.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	if _, err := registry.PutBytes(ctx, s, "big/blob.bin", big, nil); err != nil {
		t.Fatal(err)
	}
	if b, err := registry.GetBytes(ctx, s, "big/blob.bin"); err != nil || !bytes.Equal(b, big) {
		t.Fatalf("1 MiB round trip: %d bytes, %v", len(b), err)
	}
}

func testObjWriteOnce(t *testing.T, s registry.ObjectStore) {
	ctx := context.Background()
	key := "prompt_agent_trajectories/prompt_id=p1/trajectory.json"
	if _, err := registry.PutBytes(ctx, s, key, []byte("first"), nil); err != nil {
		t.Fatal(err)
	}
	_, err := registry.PutBytes(ctx, s, key, []byte("second"), nil)
	if !errors.Is(err, registry.ErrAlreadyExists) || !strings.Contains(err.Error(), key) {
		t.Fatalf("second put: %v, want ErrAlreadyExists naming the key", err)
	}
	if b, _ := registry.GetBytes(ctx, s, key); string(b) != "first" {
		t.Fatalf("refused overwrite changed the object: %q", b)
	}
	if _, err := registry.PutBytes(ctx, s, key, []byte("third"), &registry.ObjectPutOptions{Overwrite: true}); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	if b, _ := registry.GetBytes(ctx, s, key); string(b) != "third" {
		t.Fatalf("after overwrite: %q", b)
	}
}

func testObjInvalidKeys(t *testing.T, s registry.ObjectStore) {
	ctx := context.Background()
	bad := []string{"", "/etc/passwd", "../x", "a/../../x", "a/..", "./a", "a/./b", "a//b", "a/", `a\b`, "a\x00b",
		".agentenv-tmp/x", ".agentenv-meta/x", ".gitignore", strings.Repeat("k", 3000)}
	for _, key := range bad {
		if _, err := registry.PutBytes(ctx, s, key, []byte("x"), nil); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("Put(%.40q): %v, want ErrInvalid", key, err)
		}
		if _, _, err := s.Open(ctx, key); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("Open(%.40q): %v, want ErrInvalid", key, err)
		}
		if _, err := s.Exists(ctx, key); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("Exists(%.40q): %v, want ErrInvalid", key, err)
		}
	}
	if _, err := s.List(ctx, "../"); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("List(../): %v", err)
	}
}

func testObjNotFound(t *testing.T, s registry.ObjectStore) {
	ctx := context.Background()
	for _, key := range []string{"missing", "artifacts/file/none/1/x.txt"} {
		if _, _, err := s.Open(ctx, key); !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), key) {
			t.Errorf("Open(%s): %v", key, err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("Stat(%s): %v", key, err)
		}
		if ok, err := s.Exists(ctx, key); ok || err != nil {
			t.Errorf("Exists(%s) = %v, %v", key, ok, err)
		}
	}
	// A directory (a prefix of other keys) is not an object.
	if _, err := registry.PutBytes(ctx, s, "dir/child", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Exists(ctx, "dir"); ok || err != nil {
		t.Errorf("Exists(dir) = %v, %v", ok, err)
	}
	if ok, err := s.Exists(ctx, "dir/child/deeper"); ok || err != nil {
		t.Errorf("Exists under an object = %v, %v", ok, err)
	}
}

func testObjDelete(t *testing.T, s registry.ObjectStore) {
	ctx := context.Background()
	key := "artifacts/file/gone/x.txt"
	if _, err := registry.PutBytes(ctx, s, key, []byte("x"), &registry.ObjectPutOptions{ContentType: "text/x-test"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Exists(ctx, key); ok || err != nil {
		t.Fatalf("Exists after Delete = %v, %v", ok, err)
	}
	if err := s.Delete(ctx, key); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("second Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "../x"); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("Delete of a bad key: %v, want ErrInvalid", err)
	}
	// The key is free again, and its old metadata is gone with it.
	info, err := registry.PutBytes(ctx, s, key, []byte("y"), nil)
	if err != nil || info.ContentType == "text/x-test" {
		t.Fatalf("Put after Delete = %+v, %v", info, err)
	}
}

func testObjList(t *testing.T, s registry.ObjectStore) {
	ctx := context.Background()
	keys := []string{"artifacts/file/b/1/x", "artifacts/file/a/2/y", "artifacts/file/a/1/x", "artifacts/filex/1/z", "env_trajectory/t.jsonl"}
	for _, k := range keys {
		if _, err := registry.PutBytes(ctx, s, k, []byte(k), nil); err != nil {
			t.Fatal(err)
		}
	}
	list := func(prefix string) string {
		t.Helper()
		infos, err := s.List(ctx, prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		var ks []string
		for _, i := range infos {
			if i.Size != int64(len(i.Key)) {
				t.Errorf("List size of %s = %d", i.Key, i.Size)
			}
			ks = append(ks, i.Key)
		}
		return strings.Join(ks, " ")
	}
	cases := map[string]string{
		"artifacts/file/":      "artifacts/file/a/1/x artifacts/file/a/2/y artifacts/file/b/1/x",
		"artifacts/file":       "artifacts/file/a/1/x artifacts/file/a/2/y artifacts/file/b/1/x artifacts/filex/1/z",
		"artifacts/file/a/1/x": "artifacts/file/a/1/x",
		"nothing/":             "",
		"":                     strings.Join([]string{"artifacts/file/a/1/x", "artifacts/file/a/2/y", "artifacts/file/b/1/x", "artifacts/filex/1/z", "env_trajectory/t.jsonl"}, " "),
	}
	for prefix, want := range cases {
		if got := list(prefix); got != want {
			t.Errorf("List(%q) = %q, want %q", prefix, got, want)
		}
	}
}

func testObjURLs(t *testing.T, s registry.ObjectStore) {
	ctx := context.Background()
	key := "artifacts/file/with space/1/a b.txt"
	info, err := registry.PutBytes(ctx, s, key, []byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.URL != s.URL(key) {
		t.Fatalf("info.URL %s != URL(key) %s", info.URL, s.URL(key))
	}
	back, err := s.KeyOf(info.URL)
	if err != nil || back != key {
		t.Fatalf("KeyOf(URL) = %q, %v", back, err)
	}
	rc, _, err := registry.OpenURL(ctx, s, info.URL)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	for _, foreign := range []string{"s3://bucket/key", "file:///etc/passwd", "https://example.com/x", "file://" + "/tmp/../etc/passwd"} {
		if _, err := s.KeyOf(foreign); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("KeyOf(%s): %v, want ErrInvalid", foreign, err)
		}
	}
}

// failingReader yields n bytes and then fails, like a writer interrupted
// mid-stream.
type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("connection reset mid-upload")
	}
	k := min(len(p), f.n)
	for i := range p[:k] {
		p[i] = 'z'
	}
	f.n -= k
	return k, nil
}

func testObjInterrupted(t *testing.T, s registry.ObjectStore) {
	ctx := context.Background()
	key := "verifier-outputs/run1/out.json"
	if _, err := s.Put(ctx, key, &failingReader{n: 256 << 10}, nil); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	if ok, err := s.Exists(ctx, key); ok || err != nil {
		t.Fatalf("partial object visible: Exists = %v, %v", ok, err)
	}
	if infos, _ := s.List(ctx, ""); len(infos) != 0 {
		t.Fatalf("List after a failed put = %v", infos)
	}
	// A cancelled context stops the copy the same way.
	cctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(make([]byte, 1024))
		cancel()
		_ = pw.CloseWithError(errors.New("writer gone"))
	}()
	if _, err := s.Put(cctx, key, pr, nil); err == nil {
		t.Fatal("Put with a cancelled context succeeded")
	}
	if ok, _ := s.Exists(ctx, key); ok {
		t.Fatal("partial object visible after cancel")
	}
	// The key is still free.
	if _, err := registry.PutBytes(ctx, s, key, []byte("{}"), nil); err != nil {
		t.Fatalf("put after failures: %v", err)
	}
}

func testObjConcurrent(t *testing.T, s registry.ObjectStore) {
	ctx := context.Background()
	key := "env-snapshots/race/snap.json"
	const n = 16
	var wg sync.WaitGroup
	results := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := bytes.Repeat([]byte(fmt.Sprintf("writer-%02d;", i)), 4096)
			_, err := registry.PutBytes(ctx, s, key, body, nil)
			results <- err
		}()
	}
	wg.Wait()
	close(results)
	wins := 0
	for err := range results {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, registry.ErrAlreadyExists):
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d writers won a write-once key, want exactly 1", wins)
	}
	b, err := registry.GetBytes(ctx, s, key)
	if err != nil {
		t.Fatal(err)
	}
	first := string(b[:10])
	if want := strings.Repeat(first, 4096); string(b) != want {
		t.Fatal("object mixes the bytes of several writers")
	}
}
