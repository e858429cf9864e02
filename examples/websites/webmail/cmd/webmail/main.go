// Command webmail serves the example webmail website (package webmail) on
// $MCP_HOST:$PORT (default 0.0.0.0:8080) over the email server named
// WEBMAIL_SERVER (default "email") in AGENTENV_MCP_SERVERS.
package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agentenv/agentenv/examples/websites/webmail"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	name := os.Getenv("WEBMAIL_SERVER")
	if name == "" {
		name = "email"
	}
	url := ""
	for _, kv := range strings.Split(os.Getenv("AGENTENV_MCP_SERVERS"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			url = v
		}
	}
	if url == "" {
		log.Error("AGENTENV_MCP_SERVERS names no email server", "server", name)
		os.Exit(2)
	}
	host, port := os.Getenv("MCP_HOST"), os.Getenv("PORT")
	if host == "" {
		host = "0.0.0.0"
	}
	if port == "" {
		port = "8080"
	}
	app := &webmail.App{URL: url, Name: name}
	defer app.Close()
	srv := &http.Server{Addr: net.JoinHostPort(host, port), Handler: app.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("webmail listening", "addr", srv.Addr, "email", url)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Error("serve", "err", err)
		os.Exit(1)
	}
}
