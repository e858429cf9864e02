package explorer

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/agentenv/agentenv/registry"
)

//go:embed web
var webFS embed.FS

// Stores are what the explorer reads.
type Stores struct {
	// Documents is the configured document store; Local the @local one
	// (nil or the same store when there is only one).
	Documents, Local registry.DocumentStore
	// Objects holds trajectories and artifact files; nil shows a message
	// on the panels that need it.
	Objects registry.ObjectStore
}

// docsFor routes an id to the store that owns it.
func (s *Stores) docsFor(id string) registry.DocumentStore {
	if s.Local != nil && registry.IsLocalID(id) {
		return s.Local
	}
	return s.Documents
}

// all is every distinct document store, local first.
func (s *Stores) all() []registry.DocumentStore {
	if s.Local == nil || s.Local == s.Documents {
		return []registry.DocumentStore{s.Documents}
	}
	return []registry.DocumentStore{s.Local, s.Documents}
}

// Options tunes New. A nil *Options means defaults.
type Options struct {
	// Token, when set, is required on every request: an Authorization
	// "Bearer <token>" header, the token query parameter (which also sets a
	// cookie, so links opened from `agent-env up --open` keep working) or
	// that cookie. "" = no token (loopback only; the command enforces it).
	Token string
	// AllowControl enables the buttons that change live env instances;
	// without it they render disabled.
	AllowControl bool
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
	// PluginPages are the viewer pages plugins add (plugin.ExplorerPages);
	// a bad or duplicate one is a New error.
	PluginPages []PluginPage
	// PollInterval is how often a live run page's event stream re-reads
	// the instance; 0 = 500 ms.
	PollInterval time.Duration
}

// TokenCookie is the cookie the token query parameter sets.
const TokenCookie = "agentenv_explorer_token"

// Server is the explorer: an http.Handler.
type Server struct {
	st   *Stores
	opt  Options
	e    *echo.Echo
	tmpl *templates
	// trajs caches trajectory indexes (trajectory.go).
	trajs trajCache
	// timelines caches merged timelines (timeline.go).
	timelines timelineCache
	// pf indexes listed trajectories in the background (prefetch.go).
	pfMu sync.Mutex
	pf   prefetcher
	pfWG sync.WaitGroup
}

// New builds the explorer over st.
func New(st *Stores, o *Options) (*Server, error) {
	if st == nil || st.Documents == nil {
		return nil, errors.New("explorer: a document store is required")
	}
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.PollInterval <= 0 {
		opt.PollInterval = 500 * time.Millisecond
	}
	if err := checkPluginPages(opt.PluginPages); err != nil {
		return nil, err
	}
	opt.PluginPages = append([]PluginPage(nil), opt.PluginPages...)
	tm, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	s := &Server{st: st, opt: opt, tmpl: tm, e: echo.New()}
	s.pf.ctx, s.pf.cancel = context.WithCancel(context.Background())
	s.pf.sem, s.pf.busy = make(chan struct{}, 1), map[string]bool{}
	s.e.HideBanner, s.e.HidePort = true, true
	s.e.HTTPErrorHandler = s.errorHandler
	s.routes()
	return s, nil
}

// ServeHTTP serves the explorer.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }

func (s *Server) routes() {
	e := s.e
	e.Use(middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogMethod: true, LogURIPath: true, LogStatus: true, LogLatency: true, LogError: true, HandleError: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			// The path only: a query may carry the token.
			s.opt.Logger.LogAttrs(c.Request().Context(), slog.LevelInfo, "request",
				slog.String("method", v.Method), slog.String("path", v.URIPath), slog.Int("status", v.Status),
				slog.Duration("latency", v.Latency))
			return nil
		},
	}))
	e.Use(middleware.Recover())
	e.Use(s.auth)
	e.Use(middleware.GzipWithConfig(middleware.GzipConfig{
		// An event stream must reach the browser event by event.
		Skipper: func(c echo.Context) bool { return strings.HasSuffix(c.Path(), "/events") },
	}))
	e.Use(middleware.CSRFWithConfig(middleware.CSRFConfig{
		TokenLookup: "header:X-CSRF-Token,form:_csrf", CookieName: "agentenv_csrf", CookiePath: "/",
		CookieHTTPOnly: true, CookieSameSite: http.SameSiteStrictMode,
	}))

	static, _ := fs.Sub(webFS, "web/static")
	e.StaticFS("/static", static)

	// Pages.
	e.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusFound, "/runs") })
	e.GET("/runs", s.pageRuns)
	e.GET("/run", s.pageRun)
	e.GET("/run/panel", s.pageRunPanel)
	e.GET("/trajectory", s.pageTrajectory)
	e.GET("/object", s.object)
	e.GET("/registry", s.pageRegistry)
	e.GET("/registry/versions", s.pageVersions)
	e.GET("/registry/diff", s.pageDiff)
	e.GET("/evals", s.pageEvals)
	e.GET("/eval", s.pageEval)
	e.GET("/evals/compare", s.pageCompare)
	e.GET("/envs", s.pageEnvs)
	e.GET("/env", s.pageEnv)
	e.POST("/env/tools", s.formEnvTools)
	e.POST("/env/clock", s.formEnvClock)
	e.GET("/plugins", s.pagePlugins)
	e.GET("/plugins/:plugin/:name", s.pagePlugin)

	// The JSON API the pages are built from.
	api := e.Group("/api/v1")
	api.GET("/runs", s.apiRuns)
	api.GET("/run", s.apiRun)
	api.GET("/run/events", s.apiRunEvents)
	api.GET("/trajectory", s.apiTrajectory)
	api.GET("/registry/:collection", s.apiRegistry)
	api.GET("/registry/:collection/versions", s.apiVersions)
	api.GET("/registry/:collection/diff", s.apiDiff)
	api.GET("/evals", s.apiEvals)
	api.GET("/eval", s.apiEval)
	api.GET("/evals/compare", s.apiCompare)
	api.GET("/envs", s.apiEnvs)
	api.GET("/env", s.apiEnv)
	api.POST("/env/tools", s.apiEnvTools)
	api.POST("/env/clock", s.apiEnvClock)
}

// auth requires the token when one is configured.
func (s *Server) auth(next echo.HandlerFunc) echo.HandlerFunc {
	if s.opt.Token == "" {
		return next
	}
	want := []byte(s.opt.Token)
	ok := func(got string) bool { return got != "" && subtle.ConstantTimeCompare([]byte(got), want) == 1 }
	return func(c echo.Context) error {
		r := c.Request()
		if h := r.Header.Get("Authorization"); h != "" {
			scheme, tok, found := strings.Cut(h, " ")
			if found && strings.EqualFold(scheme, "Bearer") && ok(tok) {
				return next(c)
			}
			return s.unauthorized(c)
		}
		if q := c.QueryParam("token"); q != "" {
			if !ok(q) {
				return s.unauthorized(c)
			}
			c.SetCookie(&http.Cookie{Name: TokenCookie, Value: s.opt.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			return next(c)
		}
		if ck, err := r.Cookie(TokenCookie); err == nil && ok(ck.Value) {
			return next(c)
		}
		return s.unauthorized(c)
	}
}

func (s *Server) unauthorized(c echo.Context) error {
	c.Response().Header().Set("WWW-Authenticate", `Bearer realm="agent-env explorer"`)
	return echo.NewHTTPError(http.StatusUnauthorized, "a token is required: send Authorization: Bearer <token>, or open the link agent-env up printed")
}

// errorHandler answers JSON under /api/ and a page elsewhere, and never
// shows an internal error's text (it is logged).
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, msg := http.StatusInternalServerError, "internal error (see the explorer's log)"
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code = he.Code
		if m, ok := he.Message.(string); ok {
			msg = m
		} else {
			msg = http.StatusText(code)
		}
	} else {
		s.opt.Logger.Error("request failed", "path", c.Request().URL.Path, "error", err)
	}
	if strings.HasPrefix(c.Request().URL.Path, "/api/") {
		_ = c.JSON(code, map[string]any{"error": msg})
		return
	}
	_ = s.render(c, code, "error", &page{Title: http.StatusText(code), Error: msg})
}

// badRequest is a 400 naming the parameter.
func badRequest(param, reason string) error {
	return echo.NewHTTPError(http.StatusBadRequest, param+": "+reason)
}
