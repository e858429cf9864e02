package explorer_test

import (
	"context"
	"html/template"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner/explorer"
)

// Plugin pages are listed, rendered inside the layout, linked from the
// pages of the envs they view, and a failing or panicking one shows its
// error on its own page.
func TestPluginPages(t *testing.T) {
	var gotInstance string
	pages := []explorer.PluginPage{
		{Plugin: "notes", Name: "board", Title: "Notes board", Envs: []string{"notes"},
			Render: func(_ context.Context, r *explorer.PluginRequest) (template.HTML, error) {
				if r.Instance != nil {
					gotInstance = r.Instance.InstanceID
				}
				return template.HTML(`<p id="board">` + template.HTMLEscapeString(r.Query.Get("x")) + `</p>`), nil
			}},
		{Plugin: "notes", Name: "broken", Title: "Broken", Render: func(context.Context, *explorer.PluginRequest) (template.HTML, error) {
			panic("boom")
		}},
	}
	f := newFixture(t, &explorer.Options{PluginPages: pages})
	f.liveInstance("notes-0001", "http://127.0.0.1:1", "torn_down")
	code, body, _ := f.get("/plugins")
	if code != 200 || !strings.Contains(body, `href="/plugins/notes/board"`) || !strings.Contains(body, `href="/plugins/notes/broken"`) {
		t.Errorf("/plugins = %d\n%s", code, body)
	}
	code, body, _ = f.get("/plugins/notes/board?x=" + q("<b>hi</b>") + "&instance=notes-0001")
	if code != 200 || !strings.Contains(body, `<p id="board">&lt;b&gt;hi&lt;/b&gt;</p>`) || !strings.Contains(body, "<title>Notes board") || gotInstance != "notes-0001" {
		t.Errorf("board = %d (instance %q)\n%s", code, gotInstance, body)
	}
	if code, body, _ = f.get("/plugins/notes/broken"); code != 200 || !strings.Contains(body, `id="plugin-error"`) || !strings.Contains(body, "panicked: boom") {
		t.Errorf("broken = %d\n%s", code, body)
	}
	if code, _, _ = f.get("/plugins/notes/none"); code != 404 {
		t.Errorf("unknown page = %d", code)
	}
	if code, _, _ = f.get("/plugins/notes/board?instance=nope"); code != 404 {
		t.Errorf("unknown instance = %d", code)
	}
	if _, body, _ = f.get("/env?id=notes-0001"); !strings.Contains(body, `href="/plugins/notes/board?instance=notes-0001"`) {
		t.Errorf("the env page does not link the plugin page:\n%s", body)
	}
	if code, body, _ := newFixture(t, nil).get("/plugins"); code != 200 || !strings.Contains(body, `id="plugins-empty"`) {
		t.Errorf("/plugins without pages = %d", code)
	}
	render := func(context.Context, *explorer.PluginRequest) (template.HTML, error) { return "", nil }
	for _, bad := range [][]explorer.PluginPage{
		{{Plugin: "Notes", Name: "x", Render: render}},
		{{Plugin: "notes", Name: "a/b", Render: render}},
		{{Plugin: "notes", Name: "x"}},
		{{Plugin: "notes", Name: "x", Render: render}, {Plugin: "notes", Name: "x", Render: render}},
	} {
		if _, err := explorer.New(&explorer.Stores{Documents: f.docs}, &explorer.Options{PluginPages: bad}); err == nil {
			t.Errorf("New accepted plugin pages %+v", bad)
		}
	}
}
