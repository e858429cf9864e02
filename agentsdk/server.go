package agentsdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/agentenv/agentenv/protocol"
)

// Options configures a Server; nil means defaults.
type Options struct {
	// Agent runs the tasks. Required.
	Agent Agent
	// Middleware wraps the agent's Run, the first entry outermost.
	Middleware []Middleware
	// Logger receives the SDK's logs (failures with correlation ids);
	// nil means slog.Default().
	Logger *slog.Logger
	// Addr is where ListenAndServe listens; "" means $A2A_HOST:$A2A_PORT
	// with defaults 0.0.0.0 and 8000.
	Addr string
	// DisableConfigReadback turns agent-config get off (GET answers 405
	// and the card lists no get operation).
	DisableConfigReadback bool
	// HTTPClient is used to call peer agents; nil means a client without
	// an overall timeout (runs are bounded by their context).
	HTTPClient *http.Client
	// MaxContexts bounds the per-context caches (session refs,
	// trajectories, MCP sessions); 0 means 1024.
	MaxContexts int
	// MaxTasks bounds the A2A task store (least recently used tasks are
	// forgotten); 0 means 10000.
	MaxTasks int
}

// Server serves one agent. Create it with New; it is an http.Handler.
type Server struct {
	card      Card
	opts      Options
	handler   Handler
	streaming bool
	log       *slog.Logger

	config     *configState
	mcp        *mcpRegistry
	peers      peerTable
	skills     skillRegistry
	triggers   *triggerState
	traj       *trajectoryStore
	locks      contextLocks
	sessions   *lru[string]
	mcpCache   *lru[*mcpSessions]
	mcpMu      sync.Mutex
	submitted  *lru[*a2a.Task]
	extensions []*extension
	httpClient *http.Client
	mux        *http.ServeMux
	// shutdownTimeout bounds Serve's drain; tests lower it.
	shutdownTimeout time.Duration
}

// New validates card and opts and builds the server. It returns an error
// for an invalid card (name, url) or a missing agent, and panics only on
// programmer errors in the agent's config type.
func New(card *Card, opts *Options) (*Server, error) {
	if card == nil {
		return nil, errors.New("agentsdk: card is required")
	}
	s := &Server{card: *card, shutdownTimeout: 10 * time.Second}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Agent == nil {
		return nil, errors.New("agentsdk: Options.Agent is required")
	}
	if err := s.card.validate(); err != nil {
		return nil, fmt.Errorf("agentsdk: %w", err)
	}
	if s.card.Version == "" {
		s.card.Version = "0.1.0"
	}
	if len(s.card.InputModes) == 0 {
		s.card.InputModes = []string{"text"}
	}
	if len(s.card.OutputModes) == 0 {
		s.card.OutputModes = []string{"text"}
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	s.httpClient = s.opts.HTTPClient
	if s.httpClient == nil {
		s.httpClient = &http.Client{}
	}
	max := s.opts.MaxContexts
	if max <= 0 {
		max = 1024
	}
	agent := s.opts.Agent
	if st, ok := agent.(Streamer); ok {
		s.streaming = st.Streaming()
	}
	var defaults any
	if c, ok := agent.(Configurable); ok {
		defaults = c.ConfigDefaults()
	}
	s.config = newConfigState(defaults)
	s.mcp = newMCPRegistry()
	s.traj = newTrajectoryStore(max)
	s.sessions = newLRU[string](max)
	s.mcpCache = newLRU[*mcpSessions](max)
	s.mcpCache.onEvict = func(m *mcpSessions) { m.closeAll() }
	s.submitted = newLRU[*a2a.Task](1024)
	h := Handler(agent.Run)
	for _, mw := range slices.Backward(s.opts.Middleware) {
		h = mw(h)
	}
	s.handler = h
	s.extensions = []*extension{s.mcpConfigExtension(), s.agentConfigExtension(), s.skillConfigExtension(), s.trajectoryExtension(), s.peerAgentsExtension()}
	if sn, ok := agent.(Snapshotter); ok {
		s.extensions = append(s.extensions, s.snapshotExtension(sn))
	}
	if th, ok := agent.(TriggerHost); ok && th.HostsTriggers() {
		s.triggers = newTriggerState()
		s.extensions = append(s.extensions, s.triggersExtension())
	}

	rpcPath, _ := s.card.rpcPath()
	custom, err := s.customExtensions(rpcPath)
	if err != nil {
		return nil, fmt.Errorf("agentsdk: %w", err)
	}
	if err := s.applyOverrides(); err != nil {
		return nil, fmt.Errorf("agentsdk: %w", err)
	}
	s.extensions = append(s.extensions, custom...)
	maxTasks := s.opts.MaxTasks
	if maxTasks <= 0 {
		maxTasks = 10000
	}
	rh := a2asrv.NewHandler(executor{s}, a2asrv.WithLogger(s.log), a2asrv.WithTaskStore(newTaskStore(maxTasks)))
	mux := http.NewServeMux()
	rpc := s.rpcHandler(a2asrv.NewJSONRPCHandler(requestHandler{RequestHandler: rh, submitted: s.submitted}))
	mux.Handle("POST "+rpcPath, rpc)
	// Some clients (trpc-a2a-go) always add a trailing slash.
	mux.Handle("POST "+strings.TrimSuffix(rpcPath, "/")+"/{$}", rpc)
	mux.HandleFunc("GET "+protocol.AgentCardPath, s.serveCard)
	mux.HandleFunc("GET "+protocol.LegacyAgentCardPath, s.serveCard)
	mux.HandleFunc("GET "+protocol.HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	for _, e := range s.extensions {
		s.mount(mux, e)
	}
	s.mux = mux
	return s, nil
}

// mcpSessionsFor returns the MCP session cache of a context.
func (s *Server) mcpSessionsFor(contextID string) *mcpSessions {
	s.mcpMu.Lock()
	defer s.mcpMu.Unlock()
	if m, ok := s.mcpCache.get(contextID); ok {
		return m
	}
	m := &mcpSessions{}
	s.mcpCache.put(contextID, m)
	return m
}

// Close closes the cached MCP sessions. Serve calls it on shutdown; call
// it when serving the handler some other way.
func (s *Server) Close() error {
	for _, m := range s.mcpCache.drain() {
		m.closeAll()
	}
	return nil
}

// ServeHTTP serves every route of the agent.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) serveCard(w http.ResponseWriter, _ *http.Request) {
	b, err := s.renderCard()
	if err != nil {
		s.writeOpaque(w, err, slog.String("route", "card"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// Addr returns the listen address from Options.Addr or the environment.
func (s *Server) Addr() string {
	if s.opts.Addr != "" {
		return s.opts.Addr
	}
	host := os.Getenv("A2A_HOST")
	if host == "" {
		host = protocol.DefaultA2AHost
	}
	port := os.Getenv("A2A_PORT")
	if port == "" {
		port = strconv.Itoa(protocol.DefaultA2APort)
	}
	return net.JoinHostPort(host, port)
}

// ListenAndServe listens on Addr() and serves until ctx ends, then shuts
// down gracefully (10 s for running requests).
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.Addr())
	if err != nil {
		return fmt.Errorf("agentsdk: listen: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx ends, then shuts down gracefully: it stops
// accepting, closes connections with no request in flight and waits 10 s
// for running requests.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var conns connDrain
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second, ConnState: conns.track}
	hs.RegisterOnShutdown(conns.drain)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdownTimeout)
	defer cancel()
	defer s.Close()
	if err := hs.Shutdown(sctx); err != nil {
		// The grace period ran out: cut the requests still running rather
		// than leave their handlers going after Serve has returned.
		_ = hs.Close()
		<-errc
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
