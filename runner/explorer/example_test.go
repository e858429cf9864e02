package explorer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/memory"
	"github.com/agentenv/agentenv/runner/explorer"
)

// The explorer is an http.Handler over the stores; its JSON API is what
// the pages are built from.
func ExampleNew() {
	docs := memory.New()
	_, _ = docs.InsertRecord(context.Background(), registry.TaskInstances, "@local/demo/hello-1",
		json.RawMessage(`{"task_id":"@local/demo/hello","status":"completed","total_steps":1,"current_step":1,
"context":{"metadata":{"verifications":{"v":{"score":1,"results":[]}}}}}`))
	h, err := explorer.New(&explorer.Stores{Documents: docs}, nil)
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	res, err := http.Get(srv.URL + "/api/v1/runs?status=completed")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	var page explorer.RunsPage
	body, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(body, &page)
	for _, r := range page.Runs {
		fmt.Println(r.InstanceID, r.Status, r.Steps, *r.Score, r.Passed)
	}
	// Output: @local/demo/hello-1 completed 1/1 1 true
}
