package envsteptest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentenv/agentenv/registry/artifact"
)

func envInput(name string) artifact.EnvironmentInput {
	return artifact.EnvironmentInput{EnvironmentName: name, Filename: "seed.json", Body: strings.NewReader(`{}`)}
}

type hung struct {
	*httptest.Server
	cancels atomic.Int32
}

func (h *hung) canceled() bool { return h.cancels.Load() > 0 }

// hungAgent is an A2A agent whose tasks never leave "working".
func hungAgent(t *testing.T) *hung {
	h := &hung{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/agent.json":
			_, _ = w.Write([]byte(`{"name":"hung","url":"/a2a","capabilities":{"extensions":[]}}`))
		case "/a2a":
			var req struct {
				ID     any    `json:"id"`
				Method string `json:"method"`
			}
			_ = json.NewDecoder(r.Body).Decode(&req)
			state := "working"
			if req.Method == "tasks/cancel" {
				h.cancels.Add(1)
				state = "canceled"
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID,
				"result": map[string]any{"kind": "task", "id": "t1", "contextId": "c1", "status": map[string]any{"state": state}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(h.Close)
	return h
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
