package blobobject_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/blobobject"
	"github.com/agentenv/agentenv/registry/storetest"
)

// Test credentials of the fake server; they must never show in an error.
const (
	testKeyID  = "AKIDTESTONLY"
	testSecret = "s3cr3t-never-in-errors"
)

// fakeS3 is an in-process S3 server (gofakes3) on a real loopback socket.
type fakeS3 struct {
	URL     string
	backend *s3mem.Backend
	n       atomic.Int64
}

func startFakeS3(t testing.TB) *fakeS3 {
	t.Helper()
	be := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	return &fakeS3{URL: srv.URL, backend: be}
}

// bucket creates a new empty bucket and returns its name.
func (f *fakeS3) bucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("bucket-%d", f.n.Add(1))
	if err := f.backend.CreateBucket(name); err != nil {
		t.Fatal(err)
	}
	return name
}

func (f *fakeS3) config(bucket, prefix string) *blobobject.Config {
	return &blobobject.Config{Backend: "s3", URL: "s3://" + bucket + "/" + prefix + "?endpoint=" + f.URL,
		AccessKeyID: testKeyID, SecretAccessKey: testSecret}
}

func (f *fakeS3) open(t testing.TB, prefix string) *blobobject.Store {
	t.Helper()
	st, err := blobobject.Open(context.Background(), f.config(f.bucket(t), prefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestConformanceS3(t *testing.T) {
	f := startFakeS3(t)
	storetest.RunObjectStore(t, func(t *testing.T) registry.ObjectStore { return f.open(t, "") })
}

func TestConformanceS3WithPrefix(t *testing.T) {
	f := startFakeS3(t)
	storetest.RunObjectStore(t, func(t *testing.T) registry.ObjectStore { return f.open(t, "team-a/agentenv") })
}

func TestURLs(t *testing.T) {
	f := startFakeS3(t)
	st := f.open(t, "pre")
	ctx := context.Background()
	info, err := registry.PutBytes(ctx, st, "artifacts/file/x/1/a b.txt", []byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "s3://bucket-1/pre/artifacts/file/x/1/a%20b.txt"; info.URL != want {
		t.Fatalf("URL = %s, want %s", info.URL, want)
	}
	for _, foreign := range []string{"s3://bucket-2/pre/x", "s3://bucket-1/other/x", "gs://bucket-1/pre/x", "s3://bucket-1/pre/x?versionId=1"} {
		if _, err := st.KeyOf(foreign); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("KeyOf(%s) = %v, want ErrInvalid", foreign, err)
		}
	}
	// The prefix keeps the store's objects apart from the rest of the bucket.
	if err := f.backend.CreateBucket("shared"); err != nil {
		t.Fatal(err)
	}
	a, _ := blobobject.Open(ctx, f.config("shared", "a/"))
	b, _ := blobobject.Open(ctx, f.config("shared", "b/"))
	defer a.Close()
	defer b.Close()
	if _, err := registry.PutBytes(ctx, a, "k", []byte("a"), nil); err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.Exists(ctx, "k"); ok {
		t.Fatal("an object of prefix a/ is visible under prefix b/")
	}
}

// TestMultipartUpload puts an object several parts long and checks it
// round-trips, and that a failure in the last part publishes nothing.
func TestMultipartUpload(t *testing.T) {
	f := startFakeS3(t)
	cfg := f.config(f.bucket(t), "")
	cfg.Store.PartSize = 5 << 20 // the minimum: 3 parts for 12 MiB
	st, err := blobobject.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	body := bytes.Repeat([]byte("0123456789abcdef"), 12<<16) // 12 MiB
	info, err := registry.PutBytes(ctx, st, "big/multi.bin", body, nil)
	if err != nil || info.Size != int64(len(body)) {
		t.Fatalf("put = %+v, %v", info, err)
	}
	got, err := registry.GetBytes(ctx, st, "big/multi.bin")
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("multipart round trip: %d bytes, %v", len(got), err)
	}
	r := io.MultiReader(bytes.NewReader(body), &failAfter{})
	if _, err := st.Put(ctx, "big/broken.bin", r, nil); err == nil {
		t.Fatal("put from a reader failing after 12 MiB succeeded")
	}
	if ok, err := st.Exists(ctx, "big/broken.bin"); ok || err != nil {
		t.Fatalf("aborted multipart upload visible: %v, %v", ok, err)
	}
}

type failAfter struct{}

func (*failAfter) Read([]byte) (int, error) { return 0, errors.New("disk gone mid-upload") }

func TestOpenRefusesBadConfig(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		cfg   blobobject.Config
		field string
	}{
		{blobobject.Config{Backend: "ftp", URL: "s3://b"}, "backend"},
		{blobobject.Config{Backend: "s3"}, "url"},
		{blobobject.Config{Backend: "s3", URL: "gs://b"}, "url"},
		{blobobject.Config{Backend: "s3", URL: "s3:///prefix"}, "url"},
		{blobobject.Config{Backend: "s3", URL: "s3://b/../x"}, "url"},
		{blobobject.Config{Backend: "s3", URL: "s3://b?secret_access_key=" + testSecret}, "url"},
		{blobobject.Config{Backend: "s3", URL: "s3://AKID:" + testSecret + "@b/"}, "url"},
		{blobobject.Config{Backend: "s3", URL: "s3://b?endpoint=ftp://x"}, "url"},
		{blobobject.Config{Backend: "s3", URL: "s3://b?path_style=maybe"}, "url"},
		{blobobject.Config{Backend: "s3", URL: "s3://b", AccessKeyID: testKeyID}, "access_key_id"},
		{blobobject.Config{Backend: "gcs", URL: "gs://b?endpoint=ftp://x"}, "url"},
		{blobobject.Config{Backend: "gcs", URL: "gs://b?region=eu"}, "url"},
		{blobobject.Config{Backend: "gcs", URL: "gs://b", CredentialsJSON: `{"type":"nope","private_key":"` + testSecret + `"}`}, "credentials_json"},
		{blobobject.Config{Backend: "azure", URL: "azblob://c"}, "url"},
		{blobobject.Config{Backend: "azure", URL: "azblob://c?account=acct", AccountKey: testSecret + "!"}, "account_key"},
	}
	for _, c := range cases {
		_, err := blobobject.Open(ctx, &c.cfg)
		var ie *registry.InvalidError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("Open(%s %s): %v, want an invalid %s", c.cfg.Backend, c.cfg.URL, err, c.field)
			continue
		}
		if strings.Contains(err.Error(), testSecret) {
			t.Errorf("error shows the secret: %v", err)
		}
	}
}

// TestUnreachableBucketFailsAtOpen: a closed port or a missing bucket is
// an error of Open, naming the bucket and not the credentials.
func TestUnreachableBucketFailsAtOpen(t *testing.T) {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	f := startFakeS3(t)
	for name, cfg := range map[string]*blobobject.Config{
		"closed port":    {Backend: "s3", URL: "s3://artifacts/?endpoint=" + dead, AccessKeyID: testKeyID, SecretAccessKey: testSecret, PingTimeout: 5 * time.Second},
		"missing bucket": f.config("no-such-bucket", ""),
	} {
		start := time.Now()
		_, err := blobobject.Open(ctx, cfg)
		if !errors.Is(err, registry.ErrUnavailable) {
			t.Errorf("%s: Open = %v, want ErrUnavailable", name, err)
			continue
		}
		if !strings.Contains(err.Error(), "s3://") || strings.Contains(err.Error(), testSecret) {
			t.Errorf("%s: error %q should name the bucket and not the secret", name, err)
		}
		t.Logf("%s: %v (after %s)", name, err, time.Since(start).Round(time.Millisecond))
	}
}

// TestWrongCredentialsFailAtOpen: the fake server checks nothing, so a
// server that refuses every request stands in for a bucket that refuses
// these credentials.
func TestWrongCredentialsFailAtOpen(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `<?xml version="1.0"?><Error><Code>InvalidAccessKeyId</Code><Message>denied</Message></Error>`)
	}))
	defer srv.Close()
	_, err := blobobject.Open(context.Background(), &blobobject.Config{Backend: "s3", URL: "s3://b?endpoint=" + srv.URL,
		AccessKeyID: testKeyID, SecretAccessKey: testSecret})
	if !errors.Is(err, registry.ErrUnavailable) || strings.Contains(err.Error(), testSecret) {
		t.Fatalf("Open against a refusing server = %v", err)
	}
}
