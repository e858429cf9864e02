package blobobject_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/blobobject"
	"github.com/agentenv/agentenv/registry/storetest"
)

// fakeGCS is an in-process GCS server (fake-gcs-server) on a real
// loopback socket, reached through the gs URL's endpoint.
type fakeGCS struct {
	srv *fakestorage.Server
	n   atomic.Int64
}

func startFakeGCS(t testing.TB) *fakeGCS {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Writer: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return &fakeGCS{srv: srv}
}

func (f *fakeGCS) open(t testing.TB, prefix string) *blobobject.Store {
	t.Helper()
	name := fmt.Sprintf("bucket-%d", f.n.Add(1))
	f.srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
	st, err := blobobject.Open(context.Background(), &blobobject.Config{Backend: "gcs",
		URL: "gs://" + name + "/" + prefix + "?endpoint=" + f.srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestConformanceGCS(t *testing.T) {
	f := startFakeGCS(t)
	storetest.RunObjectStore(t, func(t *testing.T) registry.ObjectStore { return f.open(t, "") })
}

func TestConformanceGCSWithPrefix(t *testing.T) {
	f := startFakeGCS(t)
	storetest.RunObjectStore(t, func(t *testing.T) registry.ObjectStore { return f.open(t, "team-a/agentenv") })
}

// TestGCSMissingBucketFailsAtOpen: a bucket the server does not have is
// an error of Open that names it.
func TestGCSMissingBucketFailsAtOpen(t *testing.T) {
	f := startFakeGCS(t)
	_, err := blobobject.Open(context.Background(), &blobobject.Config{Backend: "gcs",
		URL: "gs://no-such-bucket/?endpoint=" + f.srv.URL()})
	if !errors.Is(err, registry.ErrUnavailable) || !strings.Contains(err.Error(), "gs://no-such-bucket") {
		t.Fatalf("Open of a missing bucket = %v, want ErrUnavailable naming gs://no-such-bucket", err)
	}
}
