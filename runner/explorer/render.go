package explorer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/url"
	"path"
	"strings"

	"github.com/labstack/echo/v4"
)

// page is what every template receives.
type page struct {
	Title string
	// Nav is the highlighted menu entry ("runs", "registry", ...).
	Nav string
	// Error, when set, replaces the page's content (error pages).
	Error string
	// Control reports --allow-control (buttons enabled).
	Control bool
	CSRF    string
	Data    any
}

// templates holds one template set per page: the layout plus the page's
// file, so each page defines its own "content" and panels.
type templates struct{ sets map[string]*template.Template }

var funcs = template.FuncMap{
	"pct": func(p *float64) string {
		if p == nil {
			return "–"
		}
		return fmt.Sprintf("%.0f%%", *p*100)
	},
	"score": func(f float64) string { return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".") },
	"optscore": func(f *float64) string {
		if f == nil {
			return "–"
		}
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", *f), "0"), ".")
	},
	"json": func(v any) string {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	},
	"rawjson": func(b json.RawMessage) string {
		var buf bytes.Buffer
		if json.Indent(&buf, b, "", "  ") != nil {
			return string(b)
		}
		return buf.String()
	},
	"q":    url.QueryEscape,
	"secs": func(f float64) string { return fmt.Sprintf("%.1fs", f) },
	"ms": func(f float64) string {
		if f < 0 || math.IsNaN(f) {
			return ""
		}
		return fmt.Sprintf("%.0f ms", f)
	},
	"add":          func(a, b int) int { return a + b },
	"trunc":        truncate,
	"deref":        func(f *float64) float64 { return *f },
	"list":         func(s ...string) []string { return s },
	"histogram":    histogramSVG,
	"comparechart": compareSVG,
	"dagsvg":       dagSVG,
	"jsontree":     jsonTree,
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 { // not mid-rune
		cut--
	}
	return s[:cut] + "…"
}

func parseTemplates() (*templates, error) {
	layout, err := fs.ReadFile(webFS, "web/templates/layout.html")
	if err != nil {
		return nil, err
	}
	base, err := template.New("layout").Funcs(funcs).Parse(string(layout))
	if err != nil {
		return nil, fmt.Errorf("explorer: layout.html: %w", err)
	}
	files, err := fs.Glob(webFS, "web/templates/*.html")
	if err != nil {
		return nil, err
	}
	t := &templates{sets: map[string]*template.Template{}}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" {
			continue
		}
		b, err := fs.ReadFile(webFS, f)
		if err != nil {
			return nil, err
		}
		set, err := template.Must(base.Clone()).Parse(string(b))
		if err != nil {
			return nil, fmt.Errorf("explorer: %s: %w", f, err)
		}
		t.sets[name] = set
	}
	return t, nil
}

// render executes page name's layout into a buffer first, so a template
// error becomes a clean 500 rather than half a page.
func (s *Server) render(c echo.Context, code int, name string, p *page) error {
	return s.renderTemplate(c, code, name, "layout", p)
}

func (s *Server) renderTemplate(c echo.Context, code int, set, tmpl string, p *page) error {
	t, ok := s.tmpl.sets[set]
	if !ok {
		return fmt.Errorf("explorer: no template %q", set)
	}
	p.Control = s.opt.AllowControl
	if tok, ok := c.Get("csrf").(string); ok {
		p.CSRF = tok
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, tmpl, p); err != nil {
		return err
	}
	return c.HTMLBlob(code, buf.Bytes())
}
