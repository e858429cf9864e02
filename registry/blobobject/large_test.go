package blobobject_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/blobobject"
)

// slowTestsEnv gates the 200 MB artifact test (tens of seconds, and a
// child process holding the object twice over); .ci/run sets it for one
// run of its own, outside the -race run, where the memory figures mean
// what they say.
const slowTestsEnv = "AGENTENV_SLOW_TESTS"

// fakeS3ChildEnv makes TestHelperFakeS3 serve: the bucket to create.
const fakeS3ChildEnv = "AGENTENV_TEST_FAKES3_BUCKET"

// TestHelperFakeS3 is the child process of TestLargeArtifact: a gofakes3
// server on a loopback port, printed as its first line of stdout, that
// serves until its stdin closes (so it never outlives the parent).
// gofakes3 keeps every part of a multipart upload in memory; in a process
// of its own, that memory is not counted as the store's.
func TestHelperFakeS3(t *testing.T) {
	bucket := os.Getenv(fakeS3ChildEnv)
	if bucket == "" {
		t.Skip("helper process only")
	}
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()}
	go func() { _ = srv.Serve(l) }()
	os.Stdout.WriteString("http://" + l.Addr().String() + "\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

// startFakeS3Child starts TestHelperFakeS3 and returns its endpoint; the
// test's cleanup stops it.
func startFakeS3Child(t *testing.T, bucket string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFakeS3$", "-test.count=1")
	cmd.Env = append(os.Environ(), fakeS3ChildEnv+"="+bucket)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the child's signal to stop
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		_ = cmd.Process.Kill()
		t.Fatalf("fake S3 child: %q, %v\n%s", line, err, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return strings.TrimSpace(line)
}

// heapSys is the heap the Go runtime has taken from the OS. It does not
// shrink when memory is returned (that is HeapReleased), so it is a
// ceiling on the peak heap, read without sampling at any moment.
func heapSys() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapSys
}

// peakRSS is VmHWM, the process's peak resident set, in bytes (0 where
// /proc does not say).
func peakRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestLargeArtifact puts a 200 MB artifact to an S3 server in another
// process through a multipart upload and reads it back, streaming both
// ways: the bytes that come back hash to the bytes sent, and the store's
// side never holds the object (its heap stays far below 200 MB).
func TestLargeArtifact(t *testing.T) {
	if os.Getenv(slowTestsEnv) == "" || testing.Short() {
		t.Skip("slow (200 MB through a fake S3 server): set " + slowTestsEnv + "=1, as .ci/run does")
	}
	const size = 200 << 20
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	endpoint := startFakeS3Child(t, "artifacts")
	// The smallest parts S3 takes, 4 in flight: the store's buffers are
	// then about 25 MiB, and the collector's headroom doubles that at most,
	// so a heap near the object's size can only mean a layer holds it.
	opt := blobobject.Options{PartSize: 5 << 20, Concurrency: 4}
	st, err := blobobject.Open(ctx, &blobobject.Config{Backend: "s3", URL: "s3://artifacts/?endpoint=" + endpoint,
		AccessKeyID: testKeyID, SecretAccessKey: testSecret, Store: opt})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	runtime.GC()
	heapBefore, rssBefore := heapSys(), peakRSS()
	// The body is generated as it is read: nothing on our side holds it.
	src := sha256.New()
	body := io.TeeReader(io.LimitReader(rand.NewChaCha8([32]byte{20}), size), src)
	key := "artifacts/file/large/1/model.bin"
	start := time.Now()
	info, err := st.Put(ctx, key, body, nil)
	if err != nil {
		t.Fatalf("put 200 MB: %v", err)
	}
	putTook := time.Since(start)
	if info.Size != size {
		t.Fatalf("put: size %d, want %d", info.Size, size)
	}
	start = time.Now()
	rc, oinfo, err := st.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.New()
	n, err := io.Copy(got, rc)
	rc.Close()
	if err != nil || n != size || oinfo.Size != size {
		t.Fatalf("get: %d bytes (stat %d), %v; want %d", n, oinfo.Size, err, size)
	}
	getTook := time.Since(start)
	if !bytes.Equal(got.Sum(nil), src.Sum(nil)) {
		t.Fatalf("sha256 of the bytes read back %x, of the bytes put %x", got.Sum(nil), src.Sum(nil))
	}
	heapGrowth := heapSys() - heapBefore
	t.Logf("200 MiB: put %s, get %s; our heap ceiling grew %d MiB (part %d MiB x %d in flight); peak RSS %d MiB (%d MiB before)",
		putTook.Round(time.Millisecond), getTook.Round(time.Millisecond), heapGrowth>>20,
		opt.PartSize>>20, opt.Concurrency, peakRSS()>>20, rssBefore>>20)
	// The bound is generous (half the object, twice the buffers with the
	// collector's headroom): it fails when a layer buffers the whole
	// object, not when the collector runs late.
	if heapGrowth > size/2 {
		t.Errorf("our heap grew %d MiB while moving a 200 MiB object: something holds the object", heapGrowth>>20)
	}
	if err := st.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := registry.GetBytes(ctx, st, key); err == nil {
		t.Fatal("object readable after delete")
	}
}
