package explorer_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner/explorer"
)

// An artifact's page previews a file's bytes (text shown, binary named,
// a large file cut, deleted bytes explained) and lists a universe's pinned
// members.
func TestArtifactPreviews(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	arts := artifact.New(f.docs, f.objs, nil)
	put := func(id, name string, body []byte) *artifact.File {
		a, err := arts.PutFile(ctx, id, artifact.FileInput{Filename: name, Body: bytes.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	put("inbox", "inbox.json", []byte(`{"messages":[{"subject":"<Q3 report>"}]}`))
	put("logo", "logo.png", []byte("\x89PNG\r\n\x1a\n\x00\x00"))
	put("big", "big.txt", bytes.Repeat([]byte("é"), 40<<10)) // 80 KiB of 2-byte runes
	gone := put("gone", "gone.txt", []byte("soon deleted"))
	key, _ := f.objs.KeyOf(gone.S3URL)
	if err := f.objs.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := arts.PutUniverse(ctx, "mailbox", map[string]registry.Ref{"data/inbox.json": {ID: "inbox"}, "logo.png": {ID: "logo", Version: 1}}, nil); err != nil {
		t.Fatal(err)
	}
	preview := func(id string) *explorer.FilePreview {
		var v explorer.Versions
		f.getJSON("/api/v1/registry/artifacts/versions?id="+id, &v)
		if v.Preview == nil {
			t.Fatalf("%s: no preview", id)
		}
		return v.Preview
	}
	if p := preview("inbox"); p.Text != `{"messages":[{"subject":"<Q3 report>"}]}` || p.Binary || p.Truncated || p.Filename != "inbox.json" {
		t.Errorf("inbox preview = %+v", p)
	}
	if p := preview("logo"); !p.Binary || p.Text != "" {
		t.Errorf("logo preview = %+v", p)
	}
	if p := preview("big"); !p.Truncated || len(p.Text) != 64<<10 || p.Size != 80<<10 {
		t.Errorf("big preview: truncated %v, %d bytes of %d", p.Truncated, len(p.Text), p.Size)
	}
	if p := preview("gone"); !strings.Contains(p.Error, "not in the object store") {
		t.Errorf("gone preview = %+v", p)
	}
	var u explorer.Versions
	f.getJSON("/api/v1/registry/artifacts/versions?id=mailbox", &u)
	if len(u.Members) != 2 || u.Members[0] != (explorer.UniverseMember{Name: "data/inbox.json", ID: "inbox", Version: 1}) || u.Members[1].Name != "logo.png" {
		t.Errorf("members = %+v", u.Members)
	}
	_, page, _ := f.get("/registry/versions?collection=artifacts&id=mailbox")
	if !strings.Contains(page, `id="universe-members"`) || !strings.Contains(page, `href="/registry/versions?collection=artifacts&amp;id=inbox"`) {
		t.Errorf("universe page:\n%s", page)
	}
	_, page, _ = f.get("/registry/versions?collection=artifacts&id=inbox")
	if !strings.Contains(page, `<pre class="preview">{&#34;messages&#34;:[{&#34;subject&#34;:&#34;&lt;Q3 report&gt;&#34;}]}</pre>`) {
		t.Errorf("file page:\n%s", page)
	}
}
