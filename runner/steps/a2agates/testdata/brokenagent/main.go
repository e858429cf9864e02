// Command brokenagent is a deliberately flawed A2A agent for the release
// gate tests. It answers readiness (a card at the well-known path) but
// the card lacks a description and text output, advertises no extension,
// and the JSON-RPC endpoint answers every request with HTTP 500, so
// every agent gate but the skipped ones must fail it. It listens on
// 127.0.0.1:$A2A_PORT like the examples.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"name": "broken", "version": "0.0.1", "url": "/a2a",
			"protocolVersion": "0.3.0", "preferredTransport": "JSONRPC", "defaultInputModes": []string{"text"},
			"defaultOutputModes": []string{"image/png"}, "skills": []any{}, "capabilities": map[string]any{}})
	})
	mux.HandleFunc("/a2a", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "not implemented", http.StatusInternalServerError)
	})
	port := os.Getenv("A2A_PORT")
	if port == "" {
		port = "8000"
	}
	srv := &http.Server{Addr: "127.0.0.1:" + port, Handler: mux}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		slog.Error("brokenagent", "err", err)
		os.Exit(1)
	}
}
