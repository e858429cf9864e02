package stores_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/stores"
)

const (
	putterRootEnv   = "AGENTENV_STORES_PUTTER_ROOT"
	putterWriterEnv = "AGENTENV_STORES_PUTTER_WRITER"
	putterIDRootEnv = "AGENTENV_STORES_PUTTER_ID_ROOT"
)

// writerBytes is what writer i puts: the same size for every writer, so
// only the digest tells two writers' bytes apart.
func writerBytes(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("writer %03d\n", i)), 6000)
}

// TestHelperArtifactPutter is the child of TestMultiProcessArtifactPuts:
// it opens the default stores of the state root it is given, says READY,
// waits for its stdin to close (the start signal shared by all children),
// asks for the store id of a second, fresh state root (all children race
// to create it) and puts one version of file artifact "shared".
func TestHelperArtifactPutter(t *testing.T) {
	root := os.Getenv(putterRootEnv)
	if root == "" {
		t.Skip("helper process only")
	}
	i, _ := strconv.Atoi(os.Getenv(putterWriterEnv))
	ctx := context.Background()
	set, err := stores.Open(ctx, nil, &stores.Options{StateRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	fmt.Println("READY")
	_, _ = io.Copy(io.Discard, os.Stdin)
	id, err := registry.StoreID(os.Getenv(putterIDRootEnv))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("STOREID %s\n", id)
	f, err := set.ArtifactsFor("shared").PutFile(ctx, "shared", artifact.FileInput{Filename: "f.txt",
		Body: bytes.NewReader(writerBytes(i)), Description: strconv.Itoa(i)})
	if err != nil {
		t.Fatalf("writer %d: %v", i, err)
	}
	fmt.Printf("PUT version=%d\n", f.Version)
}

// Fifty processes put one artifact id into one state root (default
// stores: SQLite documents, fsobject objects), all released at once. Every
// writer succeeds, the versions are exactly 1..50, and every version's
// bytes are its own writer's and match its recorded sha256.
func TestMultiProcessArtifactPuts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 50 processes")
	}
	const n = 50
	root, idRoot := t.TempDir(), t.TempDir()
	ctx := context.Background()
	set, err := stores.Open(ctx, nil, &stores.Options{StateRoot: root}) // schema first
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()

	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
		rest  bytes.Buffer
	}
	children := make([]*child, n)
	t.Cleanup(func() {
		for _, c := range children {
			if c != nil && c.cmd.ProcessState == nil {
				_ = c.cmd.Process.Kill()
				_ = c.cmd.Wait()
			}
		}
	})
	for i := range children {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperArtifactPutter$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), putterRootEnv+"="+root, putterWriterEnv+"="+strconv.Itoa(i), putterIDRootEnv+"="+idRoot)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = &child{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	}
	// Wait until every child has its stores open, then release them all.
	for i, c := range children {
		for {
			line, err := c.out.ReadString('\n')
			c.rest.WriteString(line)
			if err != nil {
				t.Fatalf("writer %d ended before READY: %v\n%s", i, err, c.rest.String())
			}
			if strings.TrimSpace(line) == "READY" {
				break
			}
		}
	}
	for _, c := range children {
		c.stdin.Close()
	}
	var wg sync.WaitGroup
	fails := make([]error, n)
	for i, c := range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(&c.rest, c.out)
			if err := c.cmd.Wait(); err != nil {
				fails[i] = fmt.Errorf("writer %d: %v\n%s", i, err, c.rest.String())
			}
		}()
	}
	wg.Wait()
	failed := 0
	for _, err := range fails {
		if err != nil {
			failed++
			if failed <= 3 {
				t.Error(err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d writers failed", failed, n)
	}
	// All children raced to create idRoot's store id: one won, all saw it.
	want, err := registry.StoreID(idRoot)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range children {
		if !strings.Contains(c.rest.String(), "STOREID "+want+"\n") {
			t.Errorf("writer %d did not see store id %s:\n%s", i, want, c.rest.String())
		}
	}

	arts := set.ArtifactsFor("shared")
	vs, err := set.Documents.Versions(ctx, registry.Artifacts, "shared")
	if err != nil {
		t.Fatal(err)
	}
	writers := map[string]int{}
	corrupt := 0
	for i, d := range vs {
		if d.Version != i+1 {
			t.Fatalf("version %d at position %d", d.Version, i)
		}
		var f artifact.File
		if err := d.Decode(&f); err != nil {
			t.Fatal(err)
		}
		writers[f.Description]++
		w, _ := strconv.Atoi(f.Description)
		want := writerBytes(w)
		sum := sha256.Sum256(want)
		if f.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("v%d: recorded sha256 is not writer %d's", d.Version, w)
		}
		key, err := set.Objects.KeyOf(f.S3URL)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := registry.GetBytes(ctx, set.Objects, key)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw, want) {
			corrupt++
			t.Errorf("v%d (writer %d) holds another writer's bytes", d.Version, w)
		}
		rc, _, err := arts.OpenFile(ctx, d.Ref())
		if err == nil {
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
		}
		if err != nil {
			t.Errorf("v%d: get: %v", d.Version, err)
		}
	}
	if len(vs) != n || len(writers) != n {
		t.Errorf("%d versions from %d writers, want %d from %d (corrupt: %d)", len(vs), len(writers), n, n, corrupt)
	}
	// Every object under the artifact is published by a version: the
	// writers leave nothing behind.
	objs, err := set.Objects.List(ctx, "artifacts/file/shared/")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != n {
		t.Errorf("%d objects under artifacts/file/shared/, want %d", len(objs), n)
	}
}
