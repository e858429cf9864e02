package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/sqlite"
)

const helperEnv = "AGENTENV_SQLITE_HELPER_DB"

// TestHelperPutter is the child of TestMultiProcessPuts: it puts 25
// versions of one id into the database named by the environment.
func TestHelperPutter(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process only")
	}
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 25; i++ {
		if _, err := s.Put(context.Background(), registry.Tasks, "shared", json.RawMessage(fmt.Sprintf(`{"type":"task","pid":%d,"i":%d}`, os.Getpid(), i)), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// Two processes putting the same id into one file: versions 1..50, no gap,
// no duplicate.
func TestMultiProcessPuts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "documents.db")
	// Create the schema first so the children do not race on it.
	s := open(t, path)
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperPutter$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"="+path)
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("child %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	vs, err := s.Versions(context.Background(), registry.Tasks, "shared")
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{}
	for i, d := range vs {
		if d.Version != i+1 {
			t.Fatalf("version %d at position %d", d.Version, i)
		}
		var doc struct {
			PID int `json:"pid"`
		}
		d.Decode(&doc)
		pids[strconv.Itoa(doc.PID)]++
	}
	if len(vs) != 50 || len(pids) != 2 {
		t.Fatalf("%d versions from %d processes, want 50 from 2", len(vs), len(pids))
	}
}
