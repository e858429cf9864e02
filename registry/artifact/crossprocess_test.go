package artifact_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
)

// staleDocs is the document store as a second process sees it: its first
// read of id's latest version answers, then before that answer reaches
// the caller, meanwhile runs (the other process's whole put).
type staleDocs struct {
	registry.DocumentStore
	id        string
	once      sync.Once
	meanwhile func()
}

func (d *staleDocs) Get(ctx context.Context, c registry.Collection, ref registry.Ref) (registry.Document, error) {
	doc, err := d.DocumentStore.Get(ctx, c, ref)
	if ref.ID == d.id && ref.Version == 0 {
		d.once.Do(d.meanwhile)
	}
	return doc, err
}

// Two processes put the same id: A reads "no versions yet", B then writes
// version 1 completely, A finds version 1's object and document taken. A
// must go again at version 2, not fail with a conflict (the in-process lock
// cannot order two processes).
func TestPutRetriesWhenAnotherProcessTookTheVersion(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	b := artifact.New(e.docs, e.objs, nil)
	docsA := &staleDocs{DocumentStore: e.docs, id: "shared", meanwhile: func() {
		if _, err := b.PutFile(ctx, "shared", artifact.FileInput{Filename: "f.txt", Body: strings.NewReader("from B")}); err != nil {
			t.Errorf("B: %v", err)
		}
	}}
	a := artifact.New(docsA, e.objs, nil)
	fa, err := a.PutFile(ctx, "shared", artifact.FileInput{Filename: "f.txt", Body: strings.NewReader("from A")})
	if err != nil {
		t.Fatalf("A lost a version race it should have retried: %v", err)
	}
	if fa.Version != 2 {
		t.Fatalf("A wrote version %d, want 2", fa.Version)
	}
	for v, want := range map[int]string{1: "from B", 2: "from A"} {
		rc, _, err := e.arts.OpenFile(ctx, registry.Ref{ID: "shared", Version: v})
		if got := read(t, rc, err); got != want {
			t.Errorf("v%d holds %q, want %q", v, got, want)
		}
	}
}
