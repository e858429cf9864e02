// Command agentenv-browser is the website-browser workload of a website
// env (`agent-env env website-browser put`): it runs Debian's headless
// Chromium (internal/chromium) with DevTools on a loopback port and
// forwards $MCP_HOST:$BROWSER_PORT (default 0.0.0.0:9222) to it, because
// Chromium's DevTools only listens on loopback; the gateway reaches it as
// BROWSER_CDP_URL. SIGTERM or SIGINT stop the browser. It is a static
// binary, so the process provider runs it directly.
package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	"github.com/agentenv/agentenv/internal/chromium"
)

func main() { os.Exit(run()) }

func run() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	port := 9222
	if p := os.Getenv("BROWSER_PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			log.Error("BROWSER_PORT is not a port number", "value", p)
			return 2
		}
		port = n
	}
	host := os.Getenv("MCP_HOST")
	if host == "" {
		host = "0.0.0.0"
	}
	dir, err := os.MkdirTemp("", "agentenv-browser-")
	if err != nil {
		log.Error("profile folder", "err", err)
		return 1
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		log.Error("listen", "err", err)
		return 1
	}
	p, err := chromium.Start(ctx, &chromium.Options{UserDataDir: dir})
	if err != nil {
		ln.Close()
		log.Error("chromium", "err", err)
		return 1
	}
	defer p.Stop()
	du, err := url.Parse(p.DevToolsURL)
	if err != nil {
		log.Error("chromium DevTools URL", "url", p.DevToolsURL, "err", err)
		return 1
	}
	upstream := net.JoinHostPort("127.0.0.1", du.Port())
	log.Info("browser ready", "listen", ln.Addr().String(), "devtools", upstream, "pid", p.Pid())
	go func() {
		select {
		case <-ctx.Done():
		case <-waitChan(p):
			log.Error("chromium exited")
			stop()
		}
		ln.Close()
	}()
	var wg sync.WaitGroup
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			forward(ctx, c, upstream)
		}()
	}
	wg.Wait()
	return 0
}

// forward pipes c to upstream until either side closes.
func forward(ctx context.Context, c net.Conn, upstream string) {
	defer c.Close()
	var d net.Dialer
	u, err := d.DialContext(ctx, "tcp", upstream)
	if err != nil {
		return
	}
	defer u.Close()
	stop := context.AfterFunc(ctx, func() { c.Close(); u.Close() })
	defer stop()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
}

func waitChan(p *chromium.Process) <-chan struct{} {
	ch := make(chan struct{})
	go func() { p.Wait(); close(ch) }()
	return ch
}
