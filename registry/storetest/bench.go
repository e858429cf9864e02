package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentenv/agentenv/registry"
)

// benchDoc is a task-sized document (~2 KiB).
var benchDoc = func() json.RawMessage {
	step := `{"id":"s","type":"verify_sandbox","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"true"}]}`
	steps := bytes.Repeat([]byte(step+","), 20)
	return json.RawMessage(`{"type":"task","steps":[` + string(steps[:len(steps)-1]) + `]}`)
}()

// BenchmarkDocuments measures Put (a new version of one id) and Get
// (latest, and an exact version) of a versioned document.
func BenchmarkDocuments(b *testing.B, s registry.DocumentStore) {
	ctx := context.Background()
	b.Run("Put", func(b *testing.B) {
		id := "bench-put-" + registry.RandomSuffix(6)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Put(ctx, registry.Tasks, id, benchDoc, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	id := "bench-get-" + registry.RandomSuffix(6)
	for i := 0; i < 20; i++ {
		if _, err := s.Put(ctx, registry.Tasks, id, benchDoc, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("GetLatest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Get(ctx, registry.Tasks, registry.Ref{ID: id}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("GetVersion", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Get(ctx, registry.Tasks, registry.Ref{ID: id, Version: 7}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkObjects measures Put and Get of a 1 MiB object.
func BenchmarkObjects(b *testing.B, s registry.ObjectStore) {
	ctx := context.Background()
	blob := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	b.Run("Put1MiB", func(b *testing.B) {
		b.SetBytes(int64(len(blob)))
		i := 0
		for b.Loop() {
			i++
			if _, err := registry.PutBytes(ctx, s, fmt.Sprintf("bench/put/%d.bin", i), blob, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	if _, err := registry.PutBytes(ctx, s, "bench/get.bin", blob, &registry.ObjectPutOptions{Overwrite: true}); err != nil {
		b.Fatal(err)
	}
	b.Run("Get1MiB", func(b *testing.B) {
		b.SetBytes(int64(len(blob)))
		for b.Loop() {
			got, err := registry.GetBytes(ctx, s, "bench/get.bin")
			if err != nil || len(got) != len(blob) {
				b.Fatal(err)
			}
		}
	})
}
