package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// waitForServers is the startup wait: every backing MCP server concurrently,
// each with its own deadline, polling GET <base>/ready (200) and then
// GET <mcp url> (status < 500).
func (g *Gateway) waitForServers(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(g.cfg.Servers))
	for i, s := range g.cfg.Servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = g.waitOne(ctx, s)
		}()
	}
	wg.Wait()
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

// answers is the startup readiness probe: GET <base>/ready is 200, or
// GET <mcp url> is below 500, each request within perRequest.
func (g *Gateway) answers(ctx context.Context, s Server, perRequest time.Duration) bool {
	base := strings.TrimSuffix(strings.TrimRight(s.URL, "/"), "/mcp")
	probe := func(url string, ok func(int) bool) bool {
		pctx, cancel := context.WithTimeout(ctx, perRequest)
		defer cancel()
		req, err := http.NewRequestWithContext(pctx, http.MethodGet, url, nil)
		if err != nil {
			return false
		}
		resp, err := g.httpc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return ok(resp.StatusCode)
	}
	return probe(base+"/ready", func(c int) bool { return c == http.StatusOK }) ||
		probe(s.URL, func(c int) bool { return c < 500 })
}

// waitOne polls one server until it answers. The gap between probes
// starts at 10 ms and doubles up to ReadyPollInterval: a deployer starts
// the gateway together with its servers (docs/sandboxes.md), so the first
// probes usually come before the server listens, and a fixed 2 s gap would
// cost up to 2 s of every deploy.
func (g *Gateway) waitOne(ctx context.Context, s Server) error {
	deadline := time.Now().Add(g.cfg.ServerTimeout)
	var lastErr string
	gap := min(10*time.Millisecond, g.opts.ReadyPollInterval)
	for {
		if g.answers(ctx, s, 5*time.Second) {
			g.waitState.Store(s.Name, "ready")
			return nil
		}
		lastErr = "not reachable"
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("%s (%s) not ready after %s", s.Name, s.URL, g.cfg.ServerTimeout)
			g.waitState.Store(s.Name, "error: "+msg)
			return fmt.Errorf("%s", msg)
		}
		g.waitState.Store(s.Name, "waiting")
		select {
		case <-time.After(gap):
			gap = min(2*gap, g.opts.ReadyPollInterval)
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (%s)", s.Name, ctx.Err(), lastErr)
		}
	}
}

// discoverAll lists every server concurrently (one pass).
func (g *Gateway) discoverAll(ctx context.Context) {
	g.discoverMu.Lock()
	defer g.discoverMu.Unlock()
	var wg sync.WaitGroup
	changed := make([]bool, len(g.children))
	for i := range g.children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			changed[i] = g.listServer(ctx, i)
		}()
	}
	wg.Wait()
	for _, c := range changed {
		if c {
			g.toolsChanged()
			break
		}
	}
}

// listServer re-lists one child and merges the result; it reports whether
// the exposed tool set changed. Failures are logged and kept per server.
func (g *Gateway) listServer(ctx context.Context, i int) bool {
	// One listing per server at a time, so an older answer never
	// overwrites a newer one.
	g.listMu[i].Lock()
	defer g.listMu[i].Unlock()
	tools, err := g.children[i].listTools(ctx)
	if err != nil {
		g.log.Warn("tool discovery failed", "server", g.cfg.Servers[i].Name, "err", err)
	}
	changed := g.reg.setServer(i, tools, err)
	for _, rep := range g.reg.reports() {
		if rep.name == g.cfg.Servers[i].Name {
			for _, p := range rep.problems {
				g.log.Warn("tool registration problem", "server", rep.name, "problem", p)
			}
		}
	}
	return changed
}

// ensureDiscovery retries discovery synchronously when it has not yet
// succeeded (the reference retries on MCP session start, /step, /state).
func (g *Gateway) ensureDiscovery(ctx context.Context) bool {
	if g.reg.discovered() {
		return true
	}
	if !g.started.Load() {
		return false
	}
	// Callers retry on use, but a burst of calls while every server is down
	// shares one pass per second instead of queueing a pass each.
	g.passMu.Lock()
	run := time.Since(g.lastPass) >= time.Second
	if run {
		g.lastPass = time.Now()
	}
	g.passMu.Unlock()
	if run {
		g.discoverAll(ctx)
	}
	return g.reg.discovered()
}

// requestRelist asks the relist loop of server i to re-list it (coalesced).
func (g *Gateway) requestRelist(i int) {
	select {
	case g.relist[i] <- struct{}{}:
	default:
	}
}

// childNotified handles a child's notifications: tools/list_changed
// triggers a re-list of that server.
func (g *Gateway) childNotified(c *child, method string) {
	if method == string(mcp.MethodNotificationToolsListChanged) {
		g.requestRelist(c.index)
	}
}

// relistLoop re-lists server i on request, and retries a failing server
// with exponential backoff.
func (g *Gateway) relistLoop(i int) {
	defer g.wg.Done()
	backoff := 500 * time.Millisecond
	for {
		var retry <-chan time.Time
		if g.serverFailing(i) {
			retry = time.After(backoff)
		}
		select {
		case <-g.life.Done():
			return
		case <-g.relist[i]:
		case <-retry:
			backoff *= 2
			if backoff > g.opts.DiscoveryRetryMax {
				backoff = g.opts.DiscoveryRetryMax
			}
		}
		ctx, cancel := context.WithTimeout(g.life, 60*time.Second)
		changed := g.listServer(ctx, i)
		cancel()
		if !g.serverFailing(i) {
			backoff = 500 * time.Millisecond
		}
		if changed {
			g.toolsChanged()
		}
	}
}

func (g *Gateway) serverFailing(i int) bool {
	g.reg.mu.RLock()
	defer g.reg.mu.RUnlock()
	return g.reg.servers[i].listErr != nil
}
