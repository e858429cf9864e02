package envsdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// DefaultMaxBodyBytes bounds request bodies when neither Options nor
// AGENTENV_MAX_BODY_BYTES say otherwise (inline seeds are base64).
const DefaultMaxBodyBytes int64 = 256 << 20

// Environment variables the server reads.
const (
	EnvEnvironmentName = "ENVIRONMENT_NAME"
	EnvHost            = "MCP_HOST"
	EnvPort            = "MCP_PORT"
	EnvMaxBodyBytes    = "AGENTENV_MAX_BODY_BYTES"
)

// Options configure a Server. The zero value is usable.
type Options struct {
	// Impl is the value implementing the env, if any: its Go type name is
	// the card name of last resort (after ENVIRONMENT_NAME and card.Name).
	Impl any
	// MCPPath is where MCP is served; "" means the path of the card's
	// declared mcp interface, else /mcp. It is declared on the card unless
	// the card declares an mcp interface already (the declared entry wins).
	MCPPath string
	// DisableMCP serves no MCP endpoint and declares no MCP interface.
	DisableMCP bool
	// Version is the serverInfo.version of MCP initialize; "" means "0.0.0".
	Version string
	// MaxBodyBytes bounds request bodies; 0 means AGENTENV_MAX_BODY_BYTES,
	// else DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Addr is the listen address of Run; "" means $MCP_HOST:$MCP_PORT
	// (defaults 0.0.0.0:18765).
	Addr string
	// Getenv reads environment variables; nil means os.Getenv. Tests set it
	// to avoid touching the process environment.
	Getenv func(string) string
	// Logger logs server events; nil means slog.Default().
	Logger *slog.Logger
	// HTTPClient is used by the clock extension; nil means a client with
	// the reference's 5 s timeout.
	HTTPClient *http.Client
	// ShutdownTimeout bounds the drain on shutdown; 0 means 10 s.
	ShutdownTimeout time.Duration
}

// Server is an environment server: card, data plane, MCP tools and REST
// extensions on one HTTP listener. Register everything, then call Handler,
// Serve or Run; registration after that is an error.
type Server struct {
	opts Options
	card protocol.EnvCard

	mu    sync.Mutex
	errs  []error
	tools []*toolReg
	exts  []*extReg
	hook  Hook
	reset func(context.Context) error
	add   func(context.Context, []protocol.Part) error
	get   func(context.Context) ([]protocol.Part, error)
	// getGrant is set when data/get accepts a write-namespace grant.
	getGrant func(context.Context, *WriteNamespaceGrant) ([]protocol.Part, error)
	clockOn  bool
	// manifests are served by ServeInterfaceManifests when not nil.
	manifests map[string]json.RawMessage
	pages     []pageReg
	built     *built
	dataMu    sync.Mutex // data-plane calls run one at a time
	clock     clockState
}

// New returns a server for the card definition (nil is allowed: the name
// then comes from ENVIRONMENT_NAME or Options.Impl). Card fields pass
// through verbatim; capabilities.operations is always recomputed.
func New(card *protocol.EnvCard, opts *Options) *Server {
	s := &Server{}
	if opts != nil {
		s.opts = *opts
	}
	if card != nil {
		s.card = *card
	}
	if s.opts.Getenv == nil {
		s.opts.Getenv = os.Getenv
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.Default()
	}
	if s.opts.Version == "" {
		s.opts.Version = "0.0.0"
	}
	if s.opts.ShutdownTimeout == 0 {
		s.opts.ShutdownTimeout = 10 * time.Second
	}
	if s.opts.HTTPClient == nil {
		s.opts.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	}
	if s.opts.MaxBodyBytes == 0 {
		s.opts.MaxBodyBytes = DefaultMaxBodyBytes
		if v := s.opts.Getenv(EnvMaxBodyBytes); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				s.fail(fmt.Errorf("envsdk: %s=%q: want a positive integer", EnvMaxBodyBytes, v))
			} else {
				s.opts.MaxBodyBytes = n
			}
		}
	}
	return s
}

func (s *Server) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

// register runs f under the lock unless the server is already built.
func (s *Server) register(what string, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.built != nil {
		s.errs = append(s.errs, fmt.Errorf("envsdk: %s registered after the server was built", what))
		return
	}
	f()
}

// OnToolCall sets the hook run before every tools/call.
func (s *Server) OnToolCall(h Hook) { s.register("OnToolCall", func() { s.hook = h }) }

// HandleReset registers data/reset. It must clear all state.
func (s *Server) HandleReset(h func(ctx context.Context) error) {
	s.register("data/reset", func() { s.reset = h })
}

// HandleAdd registers data/add; the handler gets the parsed parts (at
// least one). TextParts and unknown kinds are the handler's to ignore.
func (s *Server) HandleAdd(h func(ctx context.Context, parts []protocol.Part) error) {
	s.register("data/add", func() { s.add = h })
}

// HandleGet registers data/get; the parts are the env's export, in the
// format data/add reads.
func (s *Server) HandleGet(h func(ctx context.Context) ([]protocol.Part, error)) {
	s.register("data/get", func() { s.get, s.getGrant = h, nil })
}

// Name returns the resolved card name.
func (s *Server) Name() string {
	if v := s.opts.Getenv(EnvEnvironmentName); v != "" {
		return v
	}
	if s.card.Name != "" {
		return s.card.Name
	}
	if s.opts.Impl != nil {
		if t := derefType(reflect.TypeOf(s.opts.Impl)); t.Name() != "" {
			return t.Name()
		}
	}
	return "env"
}

// Card returns the card as served, or the construction error.
func (s *Server) Card() (*protocol.EnvCard, error) {
	b, err := s.build()
	if err != nil {
		return nil, err
	}
	c := b.card
	return &c, nil
}

// Handler builds the server and returns its HTTP handler, or every
// construction error joined (each names the offending tool, URI or path).
func (s *Server) Handler() (http.Handler, error) {
	b, err := s.build()
	if err != nil {
		return nil, err
	}
	return b.handler, nil
}

// Addr returns the address Run listens on.
func (s *Server) Addr() string {
	if s.opts.Addr != "" {
		return s.opts.Addr
	}
	host, port := s.opts.Getenv(EnvHost), s.opts.Getenv(EnvPort)
	if host == "" {
		host = "0.0.0.0"
	}
	if port == "" {
		port = strconv.Itoa(protocol.DefaultEnvPort)
	}
	return net.JoinHostPort(host, port)
}

// Run listens on Addr and serves until ctx is cancelled, then drains.
func (s *Server) Run(ctx context.Context) error {
	if _, err := s.build(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.Addr())
	if err != nil {
		return fmt.Errorf("envsdk: listen: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is cancelled: it then stops accepting,
// ends MCP streams, closes connections with no request in flight and
// waits for in-flight requests (at most Options.ShutdownTimeout). A clean
// shutdown returns nil.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	b, err := s.build()
	if err != nil {
		ln.Close()
		return err
	}
	var conns connDrain
	srv := &http.Server{Handler: b.handler, ReadHeaderTimeout: 30 * time.Second, ConnState: conns.track}
	srv.RegisterOnShutdown(conns.drain)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.opts.Logger.Info("env server listening", "name", b.card.Name, "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	if b.mcp != nil {
		_ = b.mcp.Shutdown(sctx)
	}
	err = srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	<-errc
	return err
}

// writeJSON writes v with a status; encoding errors cannot happen for the
// values we pass.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"ok":false,"error":{"code":"extension_failed","message":"encode response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
