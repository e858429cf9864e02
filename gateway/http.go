package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/agentenv/agentenv/protocol"
)

// startingMessage is the 503 of every route but /healthz and /readyz until
// the backing servers are ready.
const startingMessage = "gateway starting: waiting for internal MCP servers"

// Mount adds a handler to the gateway's mux (the clock and trigger routes
// of the engine packages are mounted this way). pattern is a net/http
// ServeMux pattern such as "PUT /clock/set-time". Mounted routes are behind
// the same startup gate as every other route.
func (g *Gateway) Mount(pattern string, h http.Handler) {
	if strings.Contains(pattern, mcpRoute) {
		g.mcpMounted.Store(true) // the mux decides what serves it now
	}
	g.mux.Handle(pattern, h)
}

// mcpRoute is the streamable-HTTP route of the agents' MCP traffic.
const mcpRoute = "/mcp"

func (g *Gateway) buildRoutes() {
	mux := http.NewServeMux()
	g.mux = mux
	mux.Handle(mcpRoute, g.mcp)
	mux.HandleFunc("POST /step", g.serveStep)
	mux.HandleFunc("GET /state", g.serveState)
	mux.HandleFunc("POST /tools/disable", func(w http.ResponseWriter, r *http.Request) { g.serveToolAccess(w, r, true) })
	mux.HandleFunc("POST /tools/enable", func(w http.ResponseWriter, r *http.Request) { g.serveToolAccess(w, r, false) })
	mux.HandleFunc("GET "+protocol.TrajectoryPath, g.traj.serve)
	mux.HandleFunc("GET "+protocol.EnvCardPath, g.card.serve)
	mux.HandleFunc("POST "+protocol.DataPlanePath, g.serveDataPlane)
	if len(g.proxies) > 0 {
		mux.HandleFunc("/svc/", g.serveSvc)
	}
	if len(g.websites) > 0 {
		mux.HandleFunc("/website/", g.serveWebsite)
	}
	health := http.NewServeMux()
	health.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	health.HandleFunc("GET /readyz", g.serveReadyz)
	g.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			health.ServeHTTP(w, r)
			return
		}
		if !g.started.Load() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": startingMessage})
			return
		}
		// Without a control token configured, the control routes are open
		// (compatibility); New logs a warning.
		if g.cfg.ControlToken != "" && isControlPath(r.Method, r.URL.Path) && !g.tokenOK(r) {
			refuse(w, errControlToken, !strings.HasPrefix(r.URL.Path, "/tools/"))
			return
		}
		if r.URL.Path == mcpRoute && !g.mcpMounted.Load() {
			// Every agent tool call comes here; the mux's pattern match
			// was a few per cent of the gateway's CPU per call, and it
			// could only pick g.mcp for this exact, clean path.
			g.mcp.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// isControlPath reports the routes GATEWAY_CONTROL_TOKEN protects at the
// door: /tools/*, /clock/* and /triggers/*, but GET /clock/time, which
// backing servers read (env_get_time_url) and which only tells the virtual
// time agents already get from get_time. The data plane and /svc/mcp-* are
// checked by their handlers (operator). r.URL.Path is decoded, and a path
// that is not clean is redirected by the mux before any route runs.
func isControlPath(method, p string) bool {
	if p == "/clock/time" && (method == http.MethodGet || method == http.MethodHead) {
		return false
	}
	return strings.HasPrefix(p, "/tools/") || strings.HasPrefix(p, "/clock/") || strings.HasPrefix(p, "/triggers/")
}

// serveReadyz is 200 once the startup wait is done and discovery has
// succeeded, and while every backing server answers, else 503, with each
// server's state.
func (g *Gateway) serveReadyz(w http.ResponseWriter, r *http.Request) {
	servers := map[string]string{}
	problems := map[string][]string{}
	started := g.started.Load()
	for _, rep := range g.reg.reports() {
		st := rep.status
		if !started {
			v, _ := g.waitState.Load(rep.name)
			st, _ = v.(string)
		}
		servers[rep.name] = st
		if len(rep.problems) > 0 {
			problems[rep.name] = rep.problems
		}
	}
	g.reg.mu.RLock()
	if len(g.reg.nativeProblems) > 0 {
		problems["gateway"] = append([]string(nil), g.reg.nativeProblems...)
	}
	failErr := g.reg.failErr
	g.reg.mu.RUnlock()
	ready := started && g.reg.discovered()
	if started {
		// A server that stopped answering since startup (liveness.go).
		for name, why := range g.unresponsive(r.Context()) {
			servers[name] = "error: " + why
			ready = false
		}
	}
	body := map[string]any{"ready": ready, "servers": servers}
	if len(problems) > 0 {
		body["errors"] = problems
	}
	if failErr != "" {
		body["discovery_error"] = failErr
	}
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, body)
}

// writeJSON writes v as JSON without HTML escaping.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString(`{"error":"cannot encode response"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// errBodyTooLarge is returned by readBody for a body over the limit.
var errBodyTooLarge = errors.New("request body too large")

// readBody reads a control-route body within GATEWAY_MAX_BODY_BYTES.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errBodyTooLarge
		}
		return nil, err
	}
	return b, nil
}

// ReadControlBody reads and checks a control-route body the way every
// gateway route does: over the limit → 413 "request body too large"; not
// JSON → 400 "Invalid JSON body"; not an object → 400 "body must be a JSON
// object". When it fails it has already answered, in the route's envelope
// ({"error":…} or, with okEnvelope, {"ok":false,"error":…}), and returns
// nil. An empty body is returned as-is when allowEmpty is set.
func (g *Gateway) ReadControlBody(w http.ResponseWriter, r *http.Request, okEnvelope, allowEmpty bool) []byte {
	fail := func(status int, msg string) []byte {
		if okEnvelope {
			writeJSON(w, status, map[string]any{"ok": false, "error": msg})
		} else {
			writeJSON(w, status, map[string]any{"error": msg})
		}
		return nil
	}
	b, err := g.readBody(w, r)
	if errors.Is(err, errBodyTooLarge) {
		return fail(http.StatusRequestEntityTooLarge, "request body too large")
	}
	if err != nil {
		return fail(http.StatusBadRequest, "Invalid JSON body")
	}
	if allowEmpty && len(bytes.TrimSpace(b)) == 0 {
		return []byte{}
	}
	if !json.Valid(b) {
		return fail(http.StatusBadRequest, "Invalid JSON body")
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return fail(http.StatusBadRequest, "body must be a JSON object")
	}
	return b
}
