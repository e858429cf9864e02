package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/memory"
)

func TestQueryBuilder(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()
	put := func(id, typ string, n int) {
		for i := 1; i <= n; i++ {
			if _, err := s.Put(ctx, registry.Artifacts, id, json.RawMessage(fmt.Sprintf(`{"type":%q,"rank":%d}`, typ, 10-i)), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	put("a", "file", 3)
	put("b", "docker_image", 2)
	put("c", "file", 1)
	ids := func(docs []registry.Document) string {
		var out []string
		for _, d := range docs {
			out = append(out, fmt.Sprintf("%s%d", d.ID, d.Version))
		}
		return strings.Join(out, " ")
	}
	cases := []struct {
		q    *registry.Query
		want string
	}{
		{registry.NewQuery(s, registry.Artifacts), "a3 a2 a1 b2 b1 c1"},
		{registry.NewQuery(s, registry.Artifacts).ID("a").VersionGte(2), "a3 a2"},
		{registry.NewQuery(s, registry.Artifacts).ID("a").VersionLte(2).Sort("version", false), "a1 a2"},
		{registry.NewQuery(s, registry.Artifacts).ID("a").Version(2), "a2"},
		{registry.NewQuery(s, registry.Artifacts).Type("file").Latest(), "a3 c1"},
		{registry.NewQuery(s, registry.Artifacts).Latest().Sort("rank", false), "a3 b2 c1"},
		{registry.NewQuery(s, registry.Artifacts).Sort("version", true).Limit(2), "a3 a2"},
		{registry.NewQuery(s, registry.Artifacts).Offset(4), "b1 c1"},
		{registry.NewQuery(s, registry.Artifacts).ID("zzz"), ""},
	}
	for i, c := range cases {
		got, err := c.q.Execute(ctx)
		if err != nil || ids(got) != c.want {
			t.Errorf("case %d: %s, %v; want %s", i, ids(got), err, c.want)
		}
	}
	if n, err := registry.NewQuery(s, registry.Artifacts).Type("file").Limit(1).Count(ctx); err != nil || n != 4 {
		t.Errorf("Count = %d, %v", n, err)
	}
	if d, err := registry.NewQuery(s, registry.Artifacts).ID("b").First(ctx); err != nil || d.Version != 2 {
		t.Errorf("First = %+v, %v", d, err)
	}
	if _, err := registry.NewQuery(s, registry.Artifacts).ID("b").VersionGte(5).First(ctx); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("First none: %v", err)
	}
	if _, err := registry.NewQuery(s, registry.Artifacts).Limit(-1).Execute(ctx); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("negative limit: %v", err)
	}
}
