// Command agentenv-gateway serves an environment's gateway: it reads the
// configuration from the environment, listens at once on
// MCP_HOST:MCP_PORT, and exits non-zero on a malformed configuration or
// when a backing server misses its readiness deadline. SIGTERM and
// SIGINT shut it down gracefully.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/agentenv/agentenv/gateway"
	"github.com/agentenv/agentenv/gateway/browser"
)

// Exit codes.
const (
	exitOK      = 0
	exitConfig  = 2
	exitStartup = 3
	exitServe   = 1
)

func main() { os.Exit(run()) }

func run() int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	slog.SetDefault(log)
	cfg, err := gateway.ConfigFromEnv(os.Getenv)
	if err != nil {
		log.Error("invalid configuration", "err", err)
		fmt.Fprintln(os.Stderr, "agentenv-gateway: invalid configuration:", err)
		return exitConfig
	}
	opts := &gateway.Options{Logger: log}
	// BROWSER_CDP_URL adds the computer-use tools (package gateway/browser).
	src, err := browser.FromEnv(os.Getenv, cfg.Websites, log)
	if err != nil {
		log.Error("invalid configuration", "err", err)
		fmt.Fprintln(os.Stderr, "agentenv-gateway: invalid configuration:", err)
		return exitConfig
	}
	if src != nil {
		opts.ToolSources = append(opts.ToolSources, src)
	}
	g, err := gateway.New(cfg, opts)
	if err != nil {
		log.Error("invalid configuration", "err", err)
		return exitConfig
	}
	defer g.Close()
	ln, err := listen(cfg.Host, cfg.Port)
	if err != nil {
		log.Error("cannot listen", "err", err)
		return exitServe
	}
	log.Info("gateway listening", "addr", ln.Addr().String(), "name", cfg.Name, "servers", len(cfg.Servers), "mode", cfg.Mode)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := g.Run(ctx, ln); err != nil {
		log.Error("gateway stopped", "err", err)
		if errors.Is(err, gateway.ErrStartupFailed) {
			return exitStartup
		}
		return exitServe
	}
	return exitOK
}

// listen binds host:port. For the default 0.0.0.0 it binds the dual-stack
// wildcard, which also accepts IPv6 when the host has it.
func listen(host string, port int) (net.Listener, error) {
	if host == "0.0.0.0" {
		if ln, err := net.Listen("tcp", net.JoinHostPort("::", strconv.Itoa(port))); err == nil {
			return ln, nil
		}
	}
	return net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
}
