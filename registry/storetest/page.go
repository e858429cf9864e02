package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/agentenv/agentenv/registry"
)

// testPage checks registry.PageRecords (the backend's RecordPager, or the
// generic fallback): newest first, keyset cursors that neither skip nor
// repeat, string equality filters, projection, and a refused bad cursor.
func testPage(t *testing.T, s registry.DocumentStore) {
	ctx := context.Background()
	mark := uid(t, "m")
	const n = 7
	for i := range n {
		status := "completed"
		if i%3 == 0 {
			status = "failed"
		}
		body := fmt.Sprintf(`{"mark":%q,"status":%q,"n":%d,"context":{"metadata":{"eval_id":"e%d"},"big":"x"}}`, mark, status, i, i%2)
		if _, err := s.InsertRecord(ctx, registry.TaskInstances, fmt.Sprintf("%s-%02d", mark, i), json.RawMessage(body)); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	after := ""
	for pages := 0; ; pages++ {
		p, err := registry.PageRecords(ctx, s, registry.TaskInstances, &registry.PageQuery{
			Where: map[string]string{"mark": mark}, Limit: 3, After: after,
			Fields: []string{"status", "context.metadata.eval_id", "missing.path"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Records {
			keys = append(keys, r.Key)
			var got map[string]any
			if err := json.Unmarshal(r.Data, &got); err != nil {
				t.Fatal(err)
			}
			md, _ := got["context"].(map[string]any)["metadata"].(map[string]any)
			if _, big := got["context"].(map[string]any)["big"]; big || md["eval_id"] == nil || got["status"] == nil || got["missing"] != nil || got["mark"] != nil {
				t.Fatalf("projection of %s = %s; want only status and context.metadata.eval_id", r.Key, r.Data)
			}
		}
		if p.Next == "" {
			break
		}
		if pages > n {
			t.Fatal("cursor never ends")
		}
		after = p.Next
	}
	if len(keys) != n {
		t.Fatalf("paged %d records %v; want %d", len(keys), keys, n)
	}
	for i, k := range keys {
		if want := fmt.Sprintf("%s-%02d", mark, n-1-i); k != want {
			t.Fatalf("page order %v: want newest first", keys)
		}
	}
	p, err := registry.PageRecords(ctx, s, registry.TaskInstances, &registry.PageQuery{
		Where: map[string]string{"mark": mark, "status": "failed", "context.metadata.eval_id": "e0"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) != 2 || p.Next != "" { // n = 0 and 6
		t.Fatalf("filtered page = %d records, next %q; want 2, none", len(p.Records), p.Next)
	}
	var whole map[string]any
	if err := json.Unmarshal(p.Records[0].Data, &whole); err != nil || whole["mark"] != mark {
		t.Fatalf("no Fields must return the whole body, got %s", p.Records[0].Data)
	}
	for _, bad := range []*registry.PageQuery{{After: "not-a-cursor"}, {Limit: -1}, {Limit: 1001}, {Where: map[string]string{"a'b": "x"}}, {Fields: []string{"x..y"}}} {
		if _, err := registry.PageRecords(ctx, s, registry.TaskInstances, bad); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("PageRecords(%+v) = %v; want ErrInvalid", bad, err)
		}
	}
}
