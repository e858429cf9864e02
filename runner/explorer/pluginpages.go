package explorer

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/agentenv/agentenv/registry"
)

// PluginPage is a viewer page a plugin adds to the explorer, as the
// reference's explorer plugins do: served at /plugins/<Plugin>/<Name>
// inside the explorer's layout, listed on /plugins, and linked from the
// page of every env instance whose env id is in Envs. Plugins register
// them with plugin.RegisterExplorerPage.
type PluginPage struct {
	// Plugin is the owning plugin's name; Name the page's path segment
	// (lowercase letters, digits and '-').
	Plugin, Name string
	// Title is the page's heading and link text.
	Title string
	// Envs are the env ids whose instance pages link here (with
	// ?instance=<id>); empty links from no env page.
	Envs []string
	// Render returns the page's HTML body. It reads through req and never
	// writes: the explorer is a viewer.
	Render func(ctx context.Context, req *PluginRequest) (template.HTML, error)
}

// PluginRequest is what a plugin page reads.
type PluginRequest struct {
	// Query is the request's query (the token removed).
	Query url.Values
	// Documents and Objects are the explorer's stores (Objects may be nil).
	Documents registry.DocumentStore
	Objects   registry.ObjectStore
	// Instance is the env instance named by ?instance=, when there is one
	// (its control token is not included).
	Instance *EnvInstanceView
}

var pageNameRe = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// checkPluginPages refuses unnamed, duplicate or renderless pages.
func checkPluginPages(pages []PluginPage) error {
	seen := map[string]bool{}
	for _, p := range pages {
		id := p.Plugin + "/" + p.Name
		switch {
		case !pageNameRe.MatchString(p.Plugin) || !pageNameRe.MatchString(p.Name):
			return fmt.Errorf("explorer: plugin page %q: plugin and name must be lowercase letters, digits and '-'", id)
		case p.Render == nil:
			return fmt.Errorf("explorer: plugin page %s has no Render", id)
		case seen[id]:
			return fmt.Errorf("explorer: plugin page %s registered twice", id)
		}
		seen[id] = true
	}
	return nil
}

// pagesFor lists the plugin pages that view env envID.
func (s *Server) pagesFor(envID string) []PluginPage {
	var out []PluginPage
	for _, p := range s.opt.PluginPages {
		for _, e := range p.Envs {
			if e == envID {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func (s *Server) pagePlugins(c echo.Context) error {
	pages := append([]PluginPage(nil), s.opt.PluginPages...)
	sort.Slice(pages, func(i, j int) bool {
		return pages[i].Plugin+"/"+pages[i].Name < pages[j].Plugin+"/"+pages[j].Name
	})
	return s.render(c, http.StatusOK, "plugins", &page{Title: "Plugin pages", Nav: "plugins", Data: pages})
}

type pluginPageView struct {
	Page PluginPage
	Body template.HTML
	Err  string
}

func (s *Server) pagePlugin(c echo.Context) error {
	var pp *PluginPage
	for i, p := range s.opt.PluginPages {
		if p.Plugin == c.Param("plugin") && p.Name == c.Param("name") {
			pp = &s.opt.PluginPages[i]
		}
	}
	if pp == nil {
		return echo.NewHTTPError(http.StatusNotFound, "No plugin page "+c.Param("plugin")+"/"+c.Param("name")+" (see /plugins).")
	}
	ctx := c.Request().Context()
	q := c.Request().URL.Query()
	q.Del("token")
	req := &PluginRequest{Query: q, Documents: s.st.Documents, Objects: s.st.Objects}
	v := &pluginPageView{Page: *pp}
	if id := q.Get("instance"); id != "" {
		li, err := s.readEnvInstance(ctx, id)
		if errors.Is(err, registry.ErrNotFound) {
			return echo.NewHTTPError(http.StatusNotFound, "No env instance "+id+".")
		}
		if err != nil {
			return storeError(err)
		}
		req.Instance = &li.view
	}
	body, err := s.renderPlugin(ctx, pp, req)
	if err != nil {
		v.Err = "The plugin " + pp.Plugin + " could not render this page: " + err.Error()
	}
	v.Body = body
	return s.render(c, http.StatusOK, "plugin", &page{Title: pp.Title, Nav: "plugins", Data: v})
}

// renderPlugin runs a plugin's Render, turning a panic into an error so
// that a broken plugin page never takes the explorer down.
func (s *Server) renderPlugin(ctx context.Context, pp *PluginPage, req *PluginRequest) (body template.HTML, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.opt.Logger.Error("plugin page panicked", "plugin", pp.Plugin, "page", pp.Name, "panic", r)
			body, err = "", fmt.Errorf("it panicked: %v", r)
		}
	}()
	return pp.Render(ctx, req)
}
