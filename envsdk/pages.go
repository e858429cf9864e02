package envsdk

import (
	"fmt"
	"net/http"
	"strings"
)

type pageReg struct {
	prefix string
	h      http.Handler
}

// HandlePages serves h under prefix (a path ending in "/", such as
// "/console/") on the server's listener, beside MCP and the data plane:
// plain HTTP pages, such as a web console, that a gateway can proxy as a
// website. They are not advertised on the card; bodies are bounded like
// every other route's. A prefix that is not a clean path ending in "/",
// or that covers a route of the server, is an error returned by Handler.
func (s *Server) HandlePages(prefix string, h http.Handler) {
	s.register("pages "+prefix, func() { s.pages = append(s.pages, pageReg{prefix: prefix, h: h}) })
}

// mountPages serves the registered pages; reserved are the server's own
// routes.
func (s *Server) mountPages(mux *http.ServeMux, reserved []string) []error {
	var errs []error
	for _, p := range s.pages {
		if p.h == nil || !strings.HasPrefix(p.prefix, "/") || !strings.HasSuffix(p.prefix, "/") || len(p.prefix) < 3 ||
			strings.ContainsAny(p.prefix, "{} ") || strings.Contains(p.prefix, "//") || strings.Contains(p.prefix, "/../") || strings.Contains(p.prefix, "/./") {
			errs = append(errs, fmt.Errorf("envsdk: pages %q: the prefix must be a clean path ending in \"/\" (\"/console/\"), with a handler", p.prefix))
			continue
		}
		clash := ""
		for _, r := range reserved {
			if r != "" && strings.HasPrefix(strings.TrimSuffix(r, "/")+"/", p.prefix) {
				clash = r
			}
		}
		if clash != "" {
			errs = append(errs, fmt.Errorf("envsdk: pages %q: covers the server's route %s", p.prefix, clash))
			continue
		}
		if err := handleSafely(mux, p.prefix, s.limitBody(p.h)); err != nil {
			errs = append(errs, fmt.Errorf("envsdk: pages %q: %w", p.prefix, err))
		}
	}
	return errs
}
