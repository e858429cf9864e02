package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentenv/agentenv/registry"
)

// DocumentFactory returns a store for one subtest. It may be fresh or
// shared: the suite uses ids unique to each subtest. The factory registers
// its own cleanup (t.Cleanup).
type DocumentFactory func(t *testing.T) registry.DocumentStore

// RunDocumentStore runs the DocumentStore conformance suite.
func RunDocumentStore(t *testing.T, newStore DocumentFactory) {
	t.Run("Versioning", func(t *testing.T) { testVersioning(t, newStore(t)) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, newStore(t)) })
	t.Run("TypeChangeRefused", func(t *testing.T) { testTypeChange(t, newStore(t)) })
	t.Run("InvalidInput", func(t *testing.T) { testInvalid(t, newStore(t)) })
	t.Run("ExpectedVersion", func(t *testing.T) { testExpectedVersion(t, newStore(t)) })
	t.Run("List", func(t *testing.T) { testList(t, newStore(t)) })
	t.Run("ConcurrentPuts", func(t *testing.T) { testConcurrentPuts(t, newStore(t)) })
	t.Run("Records", func(t *testing.T) { testRecords(t, newStore(t)) })
	t.Run("ConcurrentRecordUpdates", func(t *testing.T) { testConcurrentUpdates(t, newStore(t)) })
	t.Run("QueryRecords", func(t *testing.T) { testQuery(t, newStore(t)) })
	t.Run("PageRecords", func(t *testing.T) { testPage(t, newStore(t)) })
	t.Run("UpdateSpec", func(t *testing.T) { testUpdateSpec(t, newStore(t)) })
	t.Run("SecretsStripped", func(t *testing.T) { testSecrets(t, newStore(t)) })
	t.Run("MetadataCompareAndSwap", func(t *testing.T) { testMetadataCAS(t, newStore(t)) })
	t.Run("Ping", func(t *testing.T) {
		if err := newStore(t).Ping(context.Background()); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	})
}

// uid makes ids unique per subtest so a shared store is fine.
func uid(t *testing.T, name string) string {
	return strings.NewReplacer("/", "-", "#", "-").Replace(t.Name()) + "-" + registry.RandomSuffix(6) + "-" + name
}

func mustPut(t *testing.T, s registry.DocumentStore, c registry.Collection, id, body string) registry.Document {
	t.Helper()
	d, err := s.Put(context.Background(), c, id, json.RawMessage(body), nil)
	if err != nil {
		t.Fatalf("Put(%s, %s): %v", c, id, err)
	}
	return d
}

func field(t *testing.T, data []byte, key string) any {
	t.Helper()
	m, err := registry.DecodeObject(data)
	if err != nil {
		t.Fatalf("stored data is not an object: %v: %s", err, data)
	}
	return m[key]
}

func testVersioning(t *testing.T, s registry.DocumentStore) {
	ctx := context.Background()
	id := uid(t, "task")
	for want := 1; want <= 3; want++ {
		d := mustPut(t, s, registry.Tasks, id, fmt.Sprintf(`{"type":"task","steps":[],"n":%d,"version":99,"id":"ignored"}`, want))
		if d.Version != want || d.ID != id || d.Type != "task" {
			t.Fatalf("put %d: got id=%q version=%d type=%q", want, d.ID, d.Version, d.Type)
		}
		if got := field(t, d.Data, "version"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("stored version field = %v, want %d", got, want)
		}
		if got := field(t, d.Data, "id"); got != id {
			t.Fatalf("stored id field = %v, want %s", got, id)
		}
		if got, _ := field(t, d.Data, "created_at_utc").(string); !strings.HasSuffix(got, "+00:00") {
			t.Fatalf("created_at_utc = %q, want an isoformat UTC time", got)
		}
		if d.CreatedAt.IsZero() {
			t.Fatal("CreatedAt is zero")
		}
	}
	latest, err := s.Get(ctx, registry.Tasks, registry.Ref{ID: id})
	if err != nil || latest.Version != 3 || fmt.Sprint(field(t, latest.Data, "n")) != "3" {
		t.Fatalf("Get latest = v%d %s, %v", latest.Version, latest.Data, err)
	}
	v2, err := s.Get(ctx, registry.Tasks, registry.Ref{ID: id, Version: 2})
	if err != nil || v2.Version != 2 || fmt.Sprint(field(t, v2.Data, "n")) != "2" {
		t.Fatalf("Get v2 = v%d %s, %v", v2.Version, v2.Data, err)
	}
	var decoded struct {
		ID      string `json:"id"`
		Version int    `json:"version"`
		N       int    `json:"n"`
	}
	if err := v2.Decode(&decoded); err != nil || decoded.N != 2 || decoded.Version != 2 || decoded.ID != id {
		t.Fatalf("Decode = %+v, %v", decoded, err)
	}
	vs, err := s.Versions(ctx, registry.Tasks, id)
	if err != nil || len(vs) != 3 {
		t.Fatalf("Versions = %d, %v", len(vs), err)
	}
	for i, d := range vs {
		if d.Version != i+1 {
			t.Fatalf("Versions[%d].Version = %d", i, d.Version)
		}
	}
	// The same id in another collection is another entity.
	if d := mustPut(t, s, registry.Envs, id, `{"type":"mcp_server"}`); d.Version != 1 {
		t.Fatalf("first env version = %d, want 1", d.Version)
	}
	// @local ids are accepted.
	lid := registry.LocalPrefix + "pkg/" + id
	if d := mustPut(t, s, registry.Artifacts, lid, `{"type":"file"}`); d.Version != 1 || d.ID != lid {
		t.Fatalf("local id put = %+v", d)
	}
}

func testNotFound(t *testing.T, s registry.DocumentStore) {
	ctx := context.Background()
	id := uid(t, "x")
	_, err := s.Get(ctx, registry.Tasks, registry.Ref{ID: id})
	var nf *registry.NotFoundError
	if !errors.Is(err, registry.ErrNotFound) || !errors.As(err, &nf) || nf.ID != id {
		t.Fatalf("Get unknown id: %v", err)
	}
	if !strings.Contains(err.Error(), "Task "+id) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("message %q does not name the task", err)
	}
	mustPut(t, s, registry.Tasks, id, `{"type":"task"}`)
	_, err = s.Get(ctx, registry.Tasks, registry.Ref{ID: id, Version: 7})
	if !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), "version=7") {
		t.Fatalf("Get unknown version: %v", err)
	}
	if _, err := s.Versions(ctx, registry.Envs, id); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("Versions of unknown id: %v", err)
	}
	if _, err := s.GetRecord(ctx, registry.Runs, id); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("GetRecord unknown: %v", err)
	}
	if err := s.DeleteRecord(ctx, registry.Runs, id); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("DeleteRecord unknown: %v", err)
	}
	if _, err := s.UpdateRecord(ctx, registry.Runs, id, func(map[string]any) error { return nil }); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("UpdateRecord unknown: %v", err)
	}
}

func testTypeChange(t *testing.T, s registry.DocumentStore) {
	ctx := context.Background()
	id := uid(t, "env")
	mustPut(t, s, registry.Envs, id, `{"type":"mcp_server"}`)
	_, err := s.Put(ctx, registry.Envs, id, json.RawMessage(`{"type":"multi"}`), nil)
	if !errors.Is(err, registry.ErrConflict) || !strings.Contains(err.Error(), "mcp_server") || !strings.Contains(err.Error(), "multi") {
		t.Fatalf("type change: %v", err)
	}
	if _, err := s.Put(ctx, registry.Envs, id, json.RawMessage(`{}`), nil); !errors.Is(err, registry.ErrConflict) {
		t.Fatalf("dropping the type: %v", err)
	}
	vs, err := s.Versions(ctx, registry.Envs, id)
	if err != nil || len(vs) != 1 {
		t.Fatalf("after refused puts: %d versions, %v", len(vs), err)
	}
	if d := mustPut(t, s, registry.Envs, id, `{"type":"mcp_server","x":1}`); d.Version != 2 {
		t.Fatalf("same type put version = %d", d.Version)
	}
}

func testInvalid(t *testing.T, s registry.DocumentStore) {
	ctx := context.Background()
	for _, id := range []string{"", "a:b", "@other/x", "local/x", "a//b", "a/../b", "bad\nid", strings.Repeat("x", 4097), "@local/"} {
		if _, err := s.Put(ctx, registry.Tasks, id, json.RawMessage(`{}`), nil); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("Put id %.40q: %v, want ErrInvalid", id, err)
		}
	}
	for _, body := range []string{``, `[]`, `null`, `"x"`, `{"a":`, `{} {}`, `{"type":3}`} {
		if _, err := s.Put(ctx, registry.Tasks, uid(t, "b"), json.RawMessage(body), nil); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("Put body %q: %v, want ErrInvalid", body, err)
		}
	}
	if _, err := s.Put(ctx, registry.Collection("nope"), "x", json.RawMessage(`{}`), nil); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("unknown collection: %v", err)
	}
	if _, err := s.Put(ctx, registry.Runs, "x", json.RawMessage(`{}`), nil); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("versioned put into a record collection: %v", err)
	}
	if _, err := s.InsertRecord(ctx, registry.Tasks, "x", json.RawMessage(`{}`)); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("record insert into a versioned collection: %v", err)
	}
	if _, err := s.InsertRecord(ctx, registry.Runs, "", json.RawMessage(`{}`)); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("empty record key: %v", err)
	}
	if _, err := s.InsertRecord(ctx, registry.Runs, uid(t, "r"), json.RawMessage(`[1]`)); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("record body not an object: %v", err)
	}
	if _, err := s.Get(ctx, registry.Tasks, registry.Ref{ID: "x", Version: -1}); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("negative version: %v", err)
	}
	if _, err := s.List(ctx, registry.Tasks, &registry.ListOptions{Limit: -1}); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("negative limit: %v", err)
	}
}

func testExpectedVersion(t *testing.T, s registry.DocumentStore) {
	ctx := context.Background()
	id := uid(t, "art")
	if _, err := s.Put(ctx, registry.Artifacts, id, json.RawMessage(`{"type":"file"}`), &registry.PutOptions{Version: 2}); !errors.Is(err, registry.ErrConflict) {
		t.Fatalf("expected v2 of a new id: %v", err)
	}
	d, err := s.Put(ctx, registry.Artifacts, id, json.RawMessage(`{"type":"file"}`), &registry.PutOptions{Version: 1})
	if err != nil || d.Version != 1 {
		t.Fatalf("expected v1: %v, %v", d.Version, err)
	}
	if _, err := s.Put(ctx, registry.Artifacts, id, json.RawMessage(`{"type":"file"}`), &registry.PutOptions{Version: 1}); !errors.Is(err, registry.ErrConflict) {
		t.Fatalf("expected v1 again: %v", err)
	}
}

func testList(t *testing.T, s registry.DocumentStore) {
	ctx := context.Background()
	p := uid(t, "")
	mustPut(t, s, registry.Artifacts, p+"b", `{"type":"file"}`)
	mustPut(t, s, registry.Artifacts, p+"a", `{"type":"file","n":1}`)
	mustPut(t, s, registry.Artifacts, p+"a", `{"type":"file","n":2}`)
	mustPut(t, s, registry.Artifacts, p+"c", `{"type":"docker_image"}`)
	mustPut(t, s, registry.Artifacts, p+"B", `{"type":"file"}`)
	mustPut(t, s, registry.Artifacts, "zz-other-"+registry.RandomSuffix(6), `{"type":"file"}`)
	all, err := s.List(ctx, registry.Artifacts, &registry.ListOptions{IDPrefix: p})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range all {
		got = append(got, strings.TrimPrefix(d.ID, p)+fmt.Sprint(d.Version))
	}
	if want := "B1 a2 b1 c1"; strings.Join(got, " ") != want {
		t.Fatalf("List = %v, want %s (latest per id, byte order)", got, want)
	}
	files, err := s.List(ctx, registry.Artifacts, &registry.ListOptions{IDPrefix: p, Type: "file", Offset: 1, Limit: 2})
	if err != nil || len(files) != 2 || files[0].ID != p+"a" || files[1].ID != p+"b" {
		t.Fatalf("List type=file offset=1 limit=2 = %v, %v", files, err)
	}
	off, err := s.List(ctx, registry.Artifacts, &registry.ListOptions{IDPrefix: p, Offset: 3})
	if err != nil || len(off) != 1 || off[0].ID != p+"c" {
		t.Fatalf("List offset=3 = %v, %v", off, err)
	}
	none, err := s.List(ctx, registry.Evals, &registry.ListOptions{IDPrefix: p})
	if err != nil || len(none) != 0 {
		t.Fatalf("List empty = %v, %v", none, err)
	}
}

func testConcurrentPuts(t *testing.T, s registry.DocumentStore) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id := uid(t, "hot")
	const n = 50
	payload := strings.Repeat("x", 8<<10)
	var wg sync.WaitGroup
	versions := make(chan int, n)
	errs := make(chan error, 2*n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"type":"task","writer":%d,"payload":%q,"check":%d}`, i, payload, i*7)
			d, err := s.Put(ctx, registry.Tasks, id, json.RawMessage(body), nil)
			if err != nil {
				errs <- err
				return
			}
			versions <- d.Version
		}()
	}
	// Readers run alongside: every document they see is whole.
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	for r := 0; r < 3; r++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				d, err := s.Get(ctx, registry.Tasks, registry.Ref{ID: id})
				if errors.Is(err, registry.ErrNotFound) {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("reader: %w", err)
					return
				}
				var doc struct {
					Writer  int    `json:"writer"`
					Payload string `json:"payload"`
					Check   int    `json:"check"`
					Version int    `json:"version"`
				}
				if err := json.Unmarshal(d.Data, &doc); err != nil || doc.Payload != payload || doc.Check != doc.Writer*7 || doc.Version != d.Version {
					errs <- fmt.Errorf("reader saw a partial or inconsistent document (v%d): %v", d.Version, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(versions)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := make(map[int]bool)
	for v := range versions {
		if seen[v] {
			t.Errorf("version %d handed out twice", v)
		}
		seen[v] = true
	}
	for v := 1; v <= n; v++ {
		if !seen[v] {
			t.Errorf("version %d missing", v)
		}
	}
	vs, err := s.Versions(ctx, registry.Tasks, id)
	if err != nil || len(vs) != n || vs[n-1].Version != n {
		t.Fatalf("stored versions: %d (last %v), %v; want 1..%d", len(vs), vs[len(vs)-1].Version, err, n)
	}
}

func testRecords(t *testing.T, s registry.DocumentStore) {
	ctx := context.Background()
	key := registry.NewInstanceID(uid(t, "task"))
	r, err := s.InsertRecord(ctx, registry.TaskInstances, key, json.RawMessage(`{"task_id":"t","status":"running","completed_steps":[],"big":12345678901234567890}`))
	if err != nil || r.Rev != 1 || r.Key != key {
		t.Fatalf("InsertRecord = %+v, %v", r, err)
	}
	if got := field(t, r.Data, "instance_id"); got != key {
		t.Fatalf("key field instance_id = %v, want %s", got, key)
	}
	if _, err := s.InsertRecord(ctx, registry.TaskInstances, key, json.RawMessage(`{}`)); !errors.Is(err, registry.ErrAlreadyExists) {
		t.Fatalf("duplicate insert: %v", err)
	}
	r, err = s.UpdateRecord(ctx, registry.TaskInstances, key, func(doc map[string]any) error {
		doc["completed_steps"] = append(doc["completed_steps"].([]any), map[string]any{"step_id": "a", "status": "success"})
		doc["current_step"] = 1
		return nil
	})
	if err != nil || r.Rev != 2 {
		t.Fatalf("UpdateRecord = rev %d, %v", r.Rev, err)
	}
	got, err := s.GetRecord(ctx, registry.TaskInstances, key)
	if err != nil || got.Rev != 2 || !strings.Contains(string(got.Data), `"step_id":"a"`) {
		t.Fatalf("GetRecord after update = %+v %s, %v", got, got.Data, err)
	}
	if !strings.Contains(string(got.Data), "12345678901234567890") {
		t.Fatalf("big number lost precision: %s", got.Data)
	}
	// A mutator error aborts without writing; ErrNoChange writes nothing.
	boom := errors.New("boom")
	if _, err := s.UpdateRecord(ctx, registry.TaskInstances, key, func(map[string]any) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("mutator error: %v", err)
	}
	if r, err := s.UpdateRecord(ctx, registry.TaskInstances, key, func(map[string]any) error { return registry.ErrNoChange }); err != nil || r.Rev != 2 {
		t.Fatalf("ErrNoChange: rev %d, %v", r.Rev, err)
	}
	// Upsert replaces the whole body (idempotent re-registration).
	r, err = s.UpsertRecord(ctx, registry.TaskInstances, key, json.RawMessage(`{"task_id":"t","status":"running"}`))
	if err != nil || r.Rev != 3 || strings.Contains(string(r.Data), "completed_steps") {
		t.Fatalf("UpsertRecord existing = %+v %s, %v", r, r.Data, err)
	}
	k2 := key + "-b"
	if r, err := s.UpsertRecord(ctx, registry.Runs, k2, json.RawMessage(`{"status":"QUEUED"}`)); err != nil || r.Rev != 1 || field(t, r.Data, "run_id") != k2 {
		t.Fatalf("UpsertRecord new = %+v, %v", r, err)
	}
	if err := s.DeleteRecord(ctx, registry.Runs, k2); err != nil {
		t.Fatalf("DeleteRecord: %v", err)
	}
	if _, err := s.GetRecord(ctx, registry.Runs, k2); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("GetRecord after delete: %v", err)
	}
	if suffix := key[strings.LastIndex(key, "-")+1:]; len(suffix) != 8 || strings.Trim(suffix, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		t.Fatalf("instance id suffix %q is not 8 chars [a-z0-9]", suffix)
	}
}

func testConcurrentUpdates(t *testing.T, s registry.DocumentStore) {
	ctx := context.Background()
	key := uid(t, "run")
	if _, err := s.InsertRecord(ctx, registry.Runs, key, json.RawMessage(`{"n":0,"steps":[]}`)); err != nil {
		t.Fatal(err)
	}
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.UpdateRecord(ctx, registry.Runs, key, func(doc map[string]any) error {
				cur, err := doc["n"].(json.Number).Int64()
				if err != nil {
					return err
				}
				doc["n"] = cur + 1
				doc["steps"] = append(doc["steps"].([]any), fmt.Sprintf("s%02d", i))
				return nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	r, err := s.GetRecord(ctx, registry.Runs, key)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		N     int      `json:"n"`
		Steps []string `json:"steps"`
	}
	if err := r.Decode(&doc); err != nil || doc.N != n || len(doc.Steps) != n || r.Rev != n+1 {
		t.Fatalf("after %d concurrent updates: n=%d steps=%d rev=%d, %v", n, doc.N, len(doc.Steps), r.Rev, err)
	}
}

func testQuery(t *testing.T, s registry.DocumentStore) {
	ctx := context.Background()
	p := uid(t, "")
	put := func(k, body string) {
		t.Helper()
		if _, err := s.InsertRecord(ctx, registry.EnvInstances, p+k, json.RawMessage(body)); err != nil {
			t.Fatal(err)
		}
	}
	put("1", `{"env_id":"items","n":3,"metadata":{"deploy_step_id":"d1"}}`)
	put("2", `{"env_id":"items","n":10,"metadata":{"deploy_step_id":"d2"}}`)
	put("3", `{"env_id":"other","n":1}`)
	put("4", `{"env_id":"items"}`)
	keys := func(rs []registry.Record) string {
		var ks []string
		for _, r := range rs {
			ks = append(ks, strings.TrimPrefix(r.Key, p))
		}
		return strings.Join(ks, ",")
	}
	q := func(rq registry.RecordQuery, want string) {
		t.Helper()
		rq.KeyStart = p
		rs, err := s.QueryRecords(ctx, registry.EnvInstances, &rq)
		if err != nil {
			t.Fatal(err)
		}
		if got := keys(rs); got != want {
			t.Errorf("QueryRecords(%+v) = %s, want %s", rq, got, want)
		}
	}
	q(registry.RecordQuery{}, "1,2,3,4")
	q(registry.RecordQuery{Desc: true}, "4,3,2,1")
	q(registry.RecordQuery{Where: map[string]any{"env_id": "items"}}, "1,2,4")
	q(registry.RecordQuery{Where: map[string]any{"env_id": "items", "metadata.deploy_step_id": "d2"}}, "2")
	q(registry.RecordQuery{Where: map[string]any{"n": 10}}, "2")
	q(registry.RecordQuery{OrderBy: "n"}, "3,1,2,4")
	q(registry.RecordQuery{OrderBy: "n", Desc: true}, "2,1,3,4")
	q(registry.RecordQuery{OrderBy: "n", Limit: 2, Offset: 1}, "1,2")
	q(registry.RecordQuery{Where: map[string]any{"env_id": "nope"}}, "")
	F := func(path string, op registry.Op, v any) []registry.Filter {
		return []registry.Filter{{Path: path, Op: op, Value: v}}
	}
	q(registry.RecordQuery{Filters: F("n", registry.OpGte, 3)}, "1,2")
	q(registry.RecordQuery{Filters: F("n", registry.OpLte, 3)}, "1,3")
	q(registry.RecordQuery{Filters: F("n", registry.OpLteOrAbsent, 3)}, "1,3,4")
	q(registry.RecordQuery{Filters: F("env_id", registry.OpNe, "items")}, "3")
	q(registry.RecordQuery{Filters: F("n", registry.OpIn, []any{1, 10})}, "2,3")
	q(registry.RecordQuery{Filters: F("metadata.deploy_step_id", registry.OpExists, true)}, "1,2")
	q(registry.RecordQuery{Filters: F("metadata", registry.OpExists, false)}, "3,4")
	q(registry.RecordQuery{Filters: F("n", registry.OpAbsentOrNull, nil)}, "4")
	q(registry.RecordQuery{Where: map[string]any{"env_id": "items"}, Filters: F("n", registry.OpGte, 4)}, "2")
	for _, bad := range []registry.Filter{{Path: "n", Op: "between"}, {Path: "", Op: registry.OpEq}, {Path: "n", Op: registry.OpIn, Value: 3}, {Path: "n", Op: registry.OpExists, Value: "yes"}} {
		if _, err := s.QueryRecords(ctx, registry.EnvInstances, &registry.RecordQuery{Filters: []registry.Filter{bad}}); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("bad filter %v: %v", bad, err)
		}
	}
}

func testUpdateSpec(t *testing.T, s registry.DocumentStore) {
	ctx := context.Background()
	key := uid(t, "inst")
	if _, err := s.InsertRecord(ctx, registry.TaskInstances, key, json.RawMessage(`{"status":"running","journal_seq":4,"completed_steps":[{"step_id":"a","status":"success"}],"context":{"metadata":{"x":1}}}`)); err != nil {
		t.Fatal(err)
	}
	u := registry.Update{
		Set:      map[string]any{"status": "completed", "context.metadata.verifications": map[string]any{"v": map[string]any{"score": 1}}},
		Unset:    []string{"context.metadata.x"},
		Inc:      map[string]float64{"journal_seq": 1},
		AddToSet: map[string][]any{"completed_steps": {map[string]any{"status": "success", "step_id": "a"}, map[string]any{"step_id": "b", "status": "failure"}}},
		Push:     map[string][]any{"rerecorded_steps": {"a"}},
	}
	r, err := s.UpdateRecord(ctx, registry.TaskInstances, key, u.Mutator())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Status         string `json:"status"`
		JournalSeq     int    `json:"journal_seq"`
		CompletedSteps []struct {
			StepID string `json:"step_id"`
		} `json:"completed_steps"`
		Rerecorded []string       `json:"rerecorded_steps"`
		Context    map[string]any `json:"context"`
	}
	if err := r.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	meta := doc.Context["metadata"].(map[string]any)
	if doc.Status != "completed" || doc.JournalSeq != 5 || len(doc.CompletedSteps) != 2 || len(doc.Rerecorded) != 1 || meta["x"] != nil || meta["verifications"] == nil {
		t.Fatalf("after update: %s", r.Data)
	}
	if r2, err := s.UpdateRecord(ctx, registry.TaskInstances, key, registry.Update{}.Mutator()); err != nil || r2.Rev != r.Rev {
		t.Fatalf("empty update wrote: rev %d→%d, %v", r.Rev, r2.Rev, err)
	}
	for _, bad := range []registry.Update{
		{Set: map[string]any{"a": 1}, Unset: []string{"a"}},
		{Set: map[string]any{"a": 1, "a.b": 2}},
		{Inc: map[string]float64{"status": 1}},
		{AddToSet: map[string][]any{"status": {1}}},
	} {
		if _, err := s.UpdateRecord(ctx, registry.TaskInstances, key, bad.Mutator()); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("update %+v: %v, want ErrInvalid", bad, err)
		}
	}
	if got, _ := s.GetRecord(ctx, registry.TaskInstances, key); got.Rev != r.Rev {
		t.Fatalf("refused updates wrote: rev %d→%d", r.Rev, got.Rev)
	}
}

// SecretValue is what the suite stores under secret keys; backend tests can
// scan their raw storage for it.
const SecretValue = "sk-storetest-DO-NOT-PERSIST-5f3a9c"

func testSecrets(t *testing.T, s registry.DocumentStore) {
	ctx := context.Background()
	ctxDoc := `{"type":"task","metadata":{"user_overrides":{"litellm_api_key":"` + SecretValue + `","judge_litellm_api_key":"` + SecretValue + `","agent_model":"m"}},
	 "deployed_agents":[{"agent_name":"a","remote_tokens":{"x":"` + SecretValue + `"}}],"cf_access_client_secret":"` + SecretValue + `"}`
	d := mustPut(t, s, registry.Tasks, uid(t, "t"), ctxDoc)
	r, err := s.InsertRecord(ctx, registry.TaskInstances, uid(t, "i"), json.RawMessage(`{"context":`+ctxDoc+`}`))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.UpdateRecord(ctx, registry.TaskInstances, r.Key, func(doc map[string]any) error {
		doc["context"].(map[string]any)["usersim_api_key"] = SecretValue
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := s.Get(ctx, registry.Tasks, d.Ref())
	r3, _ := s.GetRecord(ctx, registry.TaskInstances, r.Key)
	for name, data := range map[string][]byte{"put": d.Data, "get": d2.Data, "insert": r.Data, "update": r2.Data, "reread": r3.Data} {
		if strings.Contains(string(data), SecretValue) {
			t.Errorf("%s: secret value stored: %s", name, data)
		}
	}
	if !strings.Contains(string(r3.Data), `"agent_model":"m"`) {
		t.Errorf("non-secret override lost: %s", r3.Data)
	}
}

func testMetadataCAS(t *testing.T, s registry.DocumentStore) {
	mu, ok := s.(registry.MetadataUpdater)
	if !ok {
		t.Skip("backend does not implement registry.MetadataUpdater")
	}
	ctx := context.Background()
	id := uid(t, "agent")
	mustPut(t, s, registry.A2AAgents, id, `{"type":"a2a_agent","metadata":{"default_model":"m1"}}`)
	mustPut(t, s, registry.A2AAgents, id, `{"type":"a2a_agent","metadata":{"default_model":"m2"}}`)
	ref := registry.Ref{ID: id, Version: 1}
	d, err := mu.UpdateMetadata(ctx, registry.A2AAgents, ref, "", map[string]any{"min_disk_size_gb": 20})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version  int            `json:"version"`
		Metadata map[string]any `json:"metadata"`
	}
	if err := d.Decode(&doc); err != nil || doc.Version != 1 || doc.Metadata["default_model"] != "m1" || fmt.Sprint(doc.Metadata["min_disk_size_gb"]) != "20" {
		t.Fatalf("after update: %s, %v", d.Data, err)
	}
	stamp, _ := doc.Metadata["updated_at"].(string)
	if stamp == "" {
		t.Fatalf("no updated_at: %s", d.Data)
	}
	// A stale timestamp loses.
	if _, err := mu.UpdateMetadata(ctx, registry.A2AAgents, ref, "", map[string]any{"x": 1}); !errors.Is(err, registry.ErrConflict) {
		t.Fatalf("stale CAS: %v", err)
	}
	if _, err := mu.UpdateMetadata(ctx, registry.A2AAgents, ref, stamp, map[string]any{"x": 1}); err != nil {
		t.Fatalf("fresh CAS: %v", err)
	}
	// Other versions are untouched, and no version was added.
	vs, _ := s.Versions(ctx, registry.A2AAgents, id)
	if len(vs) != 2 || strings.Contains(string(vs[1].Data), "min_disk_size_gb") {
		t.Fatalf("versions after metadata updates: %d, v2 %s", len(vs), vs[1].Data)
	}
	if _, err := mu.UpdateMetadata(ctx, registry.A2AAgents, registry.Ref{ID: id}, "", nil); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("latest ref: %v", err)
	}
	if _, err := mu.UpdateMetadata(ctx, registry.A2AAgents, registry.Ref{ID: id, Version: 9}, "", nil); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("missing version: %v", err)
	}
}
