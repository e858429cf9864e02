package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentenv/agentenv/gateway/triggers"
	"github.com/agentenv/agentenv/gateway/vclock"
)

// Version is reported as the MCP serverInfo.version.
const Version = "0.1.0"

// Options tune a Gateway beyond its deployment Config. A nil *Options is
// the production behaviour.
type Options struct {
	// Logger receives the gateway's logs; slog.Default() when nil.
	Logger *slog.Logger
	// CallTimeout bounds one child tools/call; 600 s when zero.
	CallTimeout time.Duration
	// ReadyPollInterval is the longest gap between readiness probes of
	// a backing server (the gap starts at 10 ms and doubles); 2 s when
	// zero.
	ReadyPollInterval time.Duration
	// OpenAttempts and OpenRetryDelay bound one child session open; 10
	// attempts 1 s apart when zero.
	OpenAttempts   int
	OpenRetryDelay time.Duration
	// DiscoveryRetryMax caps the backoff between re-listings of a failing
	// server; 30 s when zero.
	DiscoveryRetryMax time.Duration
	// Changelog overrides the changelog reader (tests, other stores); when
	// nil, SERVICE_DB_URL selects Postgres or none.
	Changelog ChangelogReader
	// Clock is the virtual clock; a new unarmed one when nil (tests pass a
	// clock on a fake real-time source).
	Clock *vclock.Virtual
	// GetTimeURL is env_get_time_url of GET /clock/state: the gateway's
	// /clock/time as backing servers reach it; http://gateway:<port>/clock/time
	// when empty.
	GetTimeURL string
	// Triggers configures the trigger engine (executor, barrier default).
	Triggers *triggers.Options
	// Middlewares run around every external tool call (/mcp and /step),
	// inside the trigger hook and outside the role check, in order.
	Middlewares []Middleware
	// ToolSources add built-in native tools (the browser's computer-use
	// tools); the gateway closes them on Close.
	ToolSources []ToolSource
	// HTTPClient is used for child MCP sessions, card fetches and the
	// readiness wait; a pooled client when nil.
	HTTPClient *http.Client
}

// Gateway is one environment's front door. Build it with New, serve
// Handler (or call Run), and Close it when done.
type Gateway struct {
	cfg  *Config
	opts Options
	log  *slog.Logger

	children  []*child
	reg       *registry
	rules     *roleRules
	traj      *trajectory
	changelog ChangelogReader
	pg        *pgChangelog
	clock     *vclock.Virtual
	engine    *triggers.Engine
	unsub     func()

	consistent  chan struct{} // the consistent-mode lock
	progressSeq atomic.Int64
	call        CallHandler // external chain
	internal    CallHandler // internal chain

	mcp      *mcpFront
	card     *cardCache
	proxies  map[string]*upstreamProxy
	websites map[string]*upstreamProxy
	httpc    *http.Client
	mux      *http.ServeMux
	handler  http.Handler

	started atomic.Bool // startup wait done
	// mcpMounted is set when Mount adds a route that may match /mcp: the
	// handler then leaves /mcp to the mux instead of serving it directly.
	mcpMounted atomic.Bool
	startErr   atomic.Value
	startOnce  sync.Once
	waitState  sync.Map // server name → "waiting" | "ready" | "error: …"

	discoverMu sync.Mutex
	listMu     []sync.Mutex // per server
	passMu     sync.Mutex
	lastPass   time.Time
	relist     []chan struct{} // per server, coalesced re-list requests
	life       context.Context
	stop       context.CancelFunc
	wg         sync.WaitGroup
	closeOnce  sync.Once
}

// New builds a gateway. It validates cfg and opens the trajectory file but
// contacts no backing server: Start (or Run) does, in the background.
func New(cfg *Config, opts *Options) (*Gateway, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	g := &Gateway{cfg: c, rules: newRoleRules(), consistent: make(chan struct{}, 1)}
	if opts != nil {
		g.opts = *opts
	}
	if g.opts.Logger == nil {
		g.opts.Logger = slog.Default()
	}
	g.log = g.opts.Logger
	if g.opts.CallTimeout <= 0 {
		g.opts.CallTimeout = 600 * time.Second
	}
	if g.opts.ReadyPollInterval <= 0 {
		g.opts.ReadyPollInterval = 2 * time.Second
	}
	if g.opts.OpenAttempts <= 0 {
		g.opts.OpenAttempts = 10
	}
	if g.opts.OpenRetryDelay <= 0 {
		g.opts.OpenRetryDelay = time.Second
	}
	if g.opts.DiscoveryRetryMax <= 0 {
		g.opts.DiscoveryRetryMax = 30 * time.Second
	}
	g.httpc = g.opts.HTTPClient
	if g.httpc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 256
		tr.MaxIdleConns = 1024
		g.httpc = &http.Client{Transport: tr}
	}
	g.life, g.stop = context.WithCancel(context.Background())

	switch {
	case g.opts.Changelog != nil:
		g.changelog = g.opts.Changelog
	case c.ServiceDBURL != "":
		g.pg = newPGChangelog(c.ServiceDBURL, g.log)
		g.changelog = g.pg
	default:
		g.changelog = noChangelog{}
	}

	g.clock = g.opts.Clock
	if g.clock == nil {
		g.clock = vclock.New(nil)
	}
	g.traj = openTrajectory(c.TrajectoryFile, g.log, g.clock.Now)
	g.traj.maxField = int(max(c.TrajectoryMaxFieldBytes, 0))

	g.reg = newRegistry(c)
	g.listMu = make([]sync.Mutex, len(c.Servers))
	for i, s := range c.Servers {
		ch := &child{
			server: s, index: i, log: g.log.With("server", s.Name), httpc: g.httpc, version: Version,
			attempts: g.opts.OpenAttempts, retryDelay: g.opts.OpenRetryDelay, life: g.life,
		}
		if g.opts.HTTPClient == nil {
			ch.raw = newRawClient(s.URL)
		}
		ch.onNotify = g.childNotified
		ch.onReopen = func(c *child) { g.requestRelist(c.index) }
		g.children = append(g.children, ch)
		g.relist = append(g.relist, make(chan struct{}, 1))
		g.waitState.Store(s.Name, "waiting")
	}
	if len(c.Websites) > 0 {
		g.registerWebsiteTool()
	}
	if err := g.registerSources(); err != nil {
		g.traj.close()
		return nil, err
	}

	g.engine = triggers.New(triggerHost{g}, g.clock, g.opts.Triggers)
	// Order of a call: the trigger hook sees every completed call (refused ones
	// too, as isError), then role rules, trajectory, the consistent lock.
	external := []Middleware{g.triggerMiddleware}
	external = append(external, g.opts.Middlewares...)
	external = append(external, g.roleMiddleware, g.trajectoryMiddleware, g.consistencyMiddleware)
	g.call = Chain(g.dispatch, external...)
	g.internal = Chain(g.dispatch, g.consistencyMiddleware)

	g.proxies = map[string]*upstreamProxy{}
	for _, u := range c.RESTProxies {
		g.proxies[u.Key] = newUpstreamProxy(u, g.log)
	}
	g.websites = map[string]*upstreamProxy{}
	for _, u := range c.Websites {
		g.websites[u.Key] = newUpstreamProxy(u, g.log)
	}
	g.card = newCardCache(g)
	g.mcp = newMCPFront(g)
	g.startSessionExpiry()
	g.buildRoutes()
	g.mountEngines()
	return g, nil
}

// Config returns the effective configuration (defaults filled).
func (g *Gateway) Config() Config { return *g.cfg }

// Handler serves every route of the gateway on one port. Until Start has
// run the readiness wait, every route but /healthz and /readyz answers 503.
func (g *Gateway) Handler() http.Handler { return g.handler }

// Start begins the readiness wait and tool discovery in the background
// (idempotent). Run calls it; tests that serve Handler themselves call it.
func (g *Gateway) Start() {
	g.startOnce.Do(func() {
		if g.cfg.ControlToken == "" {
			g.log.Warn("GATEWAY_CONTROL_TOKEN is not set: /tools/*, /clock/*, /triggers/*, /agentenv and /svc/mcp-* are open to every caller, agents included")
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			if err := g.waitForServers(g.life); err != nil {
				g.startErr.Store(err)
				g.log.Error("backing servers not ready", "err", err)
				return
			}
			g.started.Store(true)
			g.engine.Start()
			g.discoverAll(g.life)
			for i := range g.children {
				g.wg.Add(1)
				go g.relistLoop(i)
			}
		}()
	})
}

// ErrStartupFailed is returned by Run when a backing server missed its
// readiness deadline (the container restart policy retries).
var ErrStartupFailed = errors.New("gateway startup failed")

// Run serves on l until ctx ends, then shuts down gracefully (in-flight
// requests get up to 10 s). It returns an error wrapping ErrStartupFailed
// when a backing server missed its readiness deadline.
func (g *Gateway) Run(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: g.handler, ReadHeaderTimeout: 30 * time.Second}
	// Agents' listening streams never end on their own: close them when
	// shutdown starts so in-flight requests drain quickly.
	srv.RegisterOnShutdown(g.mcp.close)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	g.Start()
	startFailed := make(chan error, 1)
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			if v := g.startErr.Load(); v != nil {
				startFailed <- v.(error)
				return
			}
			if g.started.Load() {
				return
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	var runErr error
	select {
	case <-ctx.Done():
	case err := <-errc:
		runErr = err
	case err := <-startFailed:
		runErr = fmt.Errorf("%w: %v", ErrStartupFailed, err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	g.Close()
	if errors.Is(runErr, http.ErrServerClosed) {
		runErr = nil
	}
	return runErr
}

// Close stops background work, closes child sessions and flushes the
// trajectory. It is idempotent.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.stop()
		g.wg.Wait()
		if g.unsub != nil {
			g.unsub()
		}
		g.engine.Close()
		g.mcp.close()
		for _, c := range g.children {
			c.Close()
		}
		g.traj.close()
		for _, s := range g.opts.ToolSources {
			if err := s.Close(); err != nil {
				g.log.Warn("tool source close", "source", s.Name(), "err", err)
			}
		}
		if g.pg != nil {
			g.pg.close()
		}
		// Idle keep-alive connections would otherwise linger on the
		// upstreams (a server's graceful shutdown waits for them).
		if g.opts.HTTPClient == nil {
			g.httpc.CloseIdleConnections()
		}
		for _, p := range g.proxies {
			p.closeIdle()
		}
		for _, p := range g.websites {
			p.closeIdle()
		}
	})
	return nil
}

// CallTool runs an internal call (trigger actions and checks): no role
// rules, no trajectory, no trigger evaluation; _meta carries only as.
func (g *Gateway) CallTool(ctx context.Context, tool string, args json.RawMessage, as string) (*ToolResult, error) {
	return g.internal(ctx, &ToolCall{Source: SourceInternal, Tool: tool, Arguments: args, As: as})
}

// ToolInfo describes an exposed tool for other components.
type ToolInfo struct {
	Name        string
	Server      string // INTERNAL_MCP_SERVERS name, or "gateway"
	Description string
	InputSchema json.RawMessage
	Annotations json.RawMessage
	ReadOnly    bool
}

// Tools lists the exposed tools in tools/list order (not role-filtered).
func (g *Gateway) Tools() []ToolInfo {
	var out []ToolInfo
	for _, e := range g.reg.snapshot() {
		srv := "gateway"
		if !e.native() {
			srv = g.cfg.Servers[e.server].Name
		}
		out = append(out, ToolInfo{Name: e.name, Server: srv, Description: e.description, InputSchema: e.inputSchema, Annotations: e.annotations, ReadOnly: e.readOnly})
	}
	return out
}

// Discovered reports whether tool discovery has succeeded.
func (g *Gateway) Discovered() bool { return g.reg.discovered() }

// SetNativeTool registers (tool != nil) or removes a gateway-native tool
// and notifies agents whose view changed. Registering a name a backing
// server exposes fails (the backing tool wins).
func (g *Gateway) SetNativeTool(name string, tool *NativeTool) error {
	changed, err := g.reg.setNative(name, tool)
	if err != nil {
		return err
	}
	if changed {
		g.toolsChanged()
	}
	return nil
}

// BackingHasTool reports whether a backing server exposes the name.
func (g *Gateway) BackingHasTool(name string) bool { return g.reg.backingHas(name) }

// SetToolRule applies a permission change exactly like /tools/disable and
// /tools/enable (trigger permission actions) and notifies agents.
func (g *Gateway) SetToolRule(role string, tools []string, all, disable bool) {
	g.rules.setRule(role, tools, all, disable)
	g.mcp.notifyChanged()
}

// EmitTrajectory writes one trajectory event; payload is a JSON object whose
// fields follow the base fields. It returns the event id.
func (g *Gateway) EmitTrajectory(eventType string, payload json.RawMessage) string {
	return g.traj.Emit(eventType, payload)
}

// ChangelogID reads the current changelog id (nil without a database).
func (g *Gateway) ChangelogID(ctx context.Context) *int64 { return g.changelog.Read(ctx) }

// toolsChanged tells connected agents whose visible tool set changed, and
// refreshes the card.
func (g *Gateway) toolsChanged() {
	g.mcp.notifyChanged()
	g.card.invalidate()
}
