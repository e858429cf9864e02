// Command brokenenv is a deliberately flawed env for the release-gate
// tests: its tool has no description and its parameters lack
// descriptions (one a list without items), so verify_mcp_tool_schema
// must fail it; and the OpenAPI document it serves at /openapi.yaml
// disagrees with its tool (query typed integer, a declared delete tool it
// lacks), so verify_spec_conformance reports blocking drift. It serves on
// $MCP_HOST:$MCP_PORT like the examples.
package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/protocol"
)

type in struct {
	Query string `json:"query"`
	Tags  []any  `json:"tags,omitempty"`
}

// spec promises what the tool does not keep.
const spec = `openapi: 3.0.0
info: {title: broken, version: "1"}
paths:
  /search:
    get:
      operationId: search
      parameters:
        - {name: query, in: query, required: true, schema: {type: integer}}
  /delete:
    post:
      operationId: delete
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {id: {type: string}}, required: [id]}
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	s := envsdk.New(&protocol.EnvCard{Name: "broken"}, nil)
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_search"},
		func(context.Context, *envsdk.Request, in) (map[string]any, error) { return map[string]any{}, nil })
	h, err := s.Handler()
	if err != nil {
		slog.Error("brokenenv", "err", err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("GET /openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write([]byte(spec))
	})
	srv := &http.Server{Addr: s.Addr(), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		slog.Error("brokenenv", "err", err)
		os.Exit(1)
	}
}
