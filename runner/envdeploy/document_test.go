package envdeploy_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
)

// TestPythonDocumentsKeptWhole reads env and agent documents as the Python
// framework writes them, with fields this build does not know and metadata
// values that are not strings: the typed read accepts them, and the stored
// documents keep every field through a read and a metadata update (the
// typed structs are never written back; puts build fresh versions).
func TestPythonDocumentsKeptWhole(t *testing.T) {
	st := envdeploytest.NewStores(t)
	ctx := context.Background()
	docs := map[registry.Collection]string{
		registry.Envs: `{"type":"mcp_server","environment_name":"py","image_name":"py:v1",
			"website_envs":[{"name":"shop","port":8080}],"future_field":{"nested":[1,2.5,"x"]},
			"metadata":{"min_disk_size_gb":20,"owner":"py","tags":["a"]}}`,
		registry.A2AAgents: `{"type":"a2a_agent","image_name":"pyagent:v1","default_model":"m",
			"future_field":{"nested":true},"metadata":{"min_disk_size_gb":20}}`,
	}
	for c, body := range docs {
		id := "@local/py/" + string(c)
		if _, err := st.Docs.Put(ctx, c, id, json.RawMessage(body), nil); err != nil {
			t.Fatal(err)
		}
		ref := registry.Ref{ID: id, Version: 1}
		var err error
		if c == registry.Envs {
			_, err = st.GetEnv(ctx, ref)
		} else {
			_, err = st.GetAgent(ctx, ref)
		}
		if err != nil {
			t.Errorf("%s: typed read of a Python document: %v", c, err)
		}
		if mu, ok := st.Docs.(registry.MetadataUpdater); ok {
			if _, err := mu.UpdateMetadata(ctx, c, ref, "", map[string]any{"note": "x"}); err != nil {
				t.Fatalf("%s: UpdateMetadata: %v", c, err)
			}
		}
		d, err := st.Docs.Get(ctx, c, ref)
		if err != nil {
			t.Fatal(err)
		}
		var want, got map[string]any
		_ = json.Unmarshal([]byte(body), &want)
		_ = json.Unmarshal(d.Data, &got)
		for k, v := range want {
			wb, _ := json.Marshal(v)
			gb, _ := json.Marshal(got[k])
			if k == "metadata" {
				m, _ := got[k].(map[string]any)
				delete(m, "note")
				delete(m, "updated_at")
				gb, _ = json.Marshal(m)
			}
			if string(wb) != string(gb) {
				t.Errorf("%s: field %s stored as %s, written %s", c, k, gb, wb)
			}
		}
	}
}
