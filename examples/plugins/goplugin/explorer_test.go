package goplugin

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner/explorer"
)

// The plugin's explorer page lists the rolls stored runs made.
func TestExplorerPage(t *testing.T) {
	ctx := context.Background()
	docs, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer docs.Close()
	h, err := explorer.New(&explorer.Stores{Documents: docs}, &explorer.Options{PluginPages: plugin.ExplorerPages(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func() string {
		res, err := srv.Client().Get(srv.URL + "/plugins/dice/rolls")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("status %d: %s", res.StatusCode, b)
		}
		return string(b)
	}
	if !strings.Contains(get(), `id="dice-empty"`) {
		t.Error("no empty message before any run")
	}
	if _, err := docs.UpsertRecord(ctx, registry.TaskInstances, "dice/game/r1", json.RawMessage(
		`{"instance_id":"dice/game/r1","status":"completed","created_at_utc":"2026-03-02 09:00 UTC","context":{"metadata":{"dice_rolls":[{"step":"roll","sides":20,"value":17}]}}}`)); err != nil {
		t.Fatal(err)
	}
	if page := get(); !strings.Contains(page, `<td class="dice-value">17</td>`) || !strings.Contains(page, "d20") {
		t.Errorf("rolls page:\n%s", page)
	}
}
