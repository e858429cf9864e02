package explorer

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/agentenv/agentenv/registry"
)

// browsable are the versioned collections the registry page lists.
var browsable = []registry.Collection{registry.Envs, registry.Artifacts, registry.A2AAgents, registry.Tasks, registry.Evals}

func browsableCollection(name string) (registry.Collection, error) {
	for _, c := range browsable {
		if string(c) == name {
			return c, nil
		}
	}
	return "", badRequest("collection", "must be one of envs, artifacts, a2a_agents, tasks, evals")
}

// DocSummary is one document in a registry list.
type DocSummary struct {
	ID        string `json:"id"`
	Version   int    `json:"version"`
	Type      string `json:"type"`
	CreatedAt string `json:"created_at_utc"`
	// Detail is a one-line description: a task's step count, an
	// artifact's kind, an env's image.
	Detail string `json:"detail,omitempty"`
}

// RegistryPage is one page of a collection's latest versions.
type RegistryPage struct {
	Collection string       `json:"collection"`
	Docs       []DocSummary `json:"docs"`
	Offset     int          `json:"offset"`
	Limit      int          `json:"limit"`
	More       bool         `json:"more"`
}

func summarizeDoc(d registry.Document) DocSummary {
	s := DocSummary{ID: d.ID, Version: d.Version, Type: d.Type, CreatedAt: registry.FormatMinute(d.CreatedAt)}
	var m map[string]json.RawMessage
	if json.Unmarshal(d.Data, &m) != nil {
		return s
	}
	var parts []string
	if steps, ok := m["steps"]; ok {
		var list []json.RawMessage
		if json.Unmarshal(steps, &list) == nil {
			parts = append(parts, strconv.Itoa(len(list))+" steps")
		}
	}
	if tasks, ok := m["tasks"]; ok {
		var list []json.RawMessage
		if json.Unmarshal(tasks, &list) == nil {
			parts = append(parts, strconv.Itoa(len(list))+" tasks")
		}
	}
	for _, k := range []string{"name", "description", "filename", "image"} {
		var v string
		if json.Unmarshal(m[k], &v) == nil && v != "" {
			parts = append(parts, truncate(v, 80))
		}
	}
	s.Detail = strings.Join(parts, " · ")
	return s
}

func (s *Server) listDocs(ctx context.Context, c registry.Collection, prefix string, offset, limit int) (*RegistryPage, error) {
	p := &RegistryPage{Collection: string(c), Docs: []DocSummary{}, Offset: offset, Limit: limit}
	// One more than the page tells whether there is a next page.
	for _, ds := range s.st.all() {
		docs, err := ds.List(ctx, c, &registry.ListOptions{IDPrefix: prefix, Offset: offset, Limit: limit + 1})
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			p.Docs = append(p.Docs, summarizeDoc(d))
		}
	}
	if len(p.Docs) > limit {
		p.Docs, p.More = p.Docs[:limit], true
	}
	return p, nil
}

func pageParams(c echo.Context) (offset, limit int, err error) { return offsetLimit(c, 100, 1000) }

// offsetLimit reads the offset (>= 0, default 0) and limit (1..most,
// default def) query parameters every paged page and endpoint takes.
func offsetLimit(c echo.Context, def, most int) (offset, limit int, err error) {
	limit = def
	if v := c.QueryParam("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			return 0, 0, badRequest("offset", "must be a number >= 0")
		}
	}
	if v := c.QueryParam("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > most {
			return 0, 0, badRequest("limit", "must be a number in 1.."+strconv.Itoa(most))
		}
	}
	return offset, limit, nil
}

func (s *Server) apiRegistry(c echo.Context) error {
	col, err := browsableCollection(c.Param("collection"))
	if err != nil {
		return err
	}
	offset, limit, err := pageParams(c)
	if err != nil {
		return err
	}
	p, err := s.listDocs(c.Request().Context(), col, c.QueryParam("prefix"), offset, limit)
	if err != nil {
		return storeError(err)
	}
	return c.JSON(http.StatusOK, p)
}

type registryView struct {
	Collections []string
	Collection  string
	Prefix      string
	Page        *RegistryPage
	Err         string
	Next, Prev  string
}

func (s *Server) pageRegistry(c echo.Context) error {
	name := c.QueryParam("collection")
	if name == "" {
		name = string(registry.Tasks)
	}
	col, err := browsableCollection(name)
	if err != nil {
		return err
	}
	offset, limit, err := pageParams(c)
	if err != nil {
		return err
	}
	v := &registryView{Collection: name, Prefix: c.QueryParam("prefix")}
	for _, b := range browsable {
		v.Collections = append(v.Collections, string(b))
	}
	v.Page, err = s.listDocs(c.Request().Context(), col, v.Prefix, offset, limit)
	if err != nil {
		v.Err = panelError(name, err)
	} else {
		link := func(off int) string {
			return "/registry?collection=" + name + "&prefix=" + v.Prefix + "&offset=" + strconv.Itoa(off) + "&limit=" + strconv.Itoa(limit)
		}
		if v.Page.More {
			v.Next = link(offset + limit)
		}
		if offset > 0 {
			v.Prev = link(max(0, offset-limit))
		}
	}
	return s.render(c, http.StatusOK, "registry", &page{Title: "Registry: " + name, Nav: "registry", Data: v})
}

// Versions lists every version of one document.
type Versions struct {
	Collection string          `json:"collection"`
	ID         string          `json:"id"`
	Versions   []DocSummary    `json:"versions"`
	Latest     json.RawMessage `json:"latest"`
	// Preview is the start of a file artifact's bytes; Members the pinned
	// members of a file universe (artifacts only).
	Preview *FilePreview     `json:"preview,omitempty"`
	Members []UniverseMember `json:"members,omitempty"`
}

func (s *Server) versions(ctx context.Context, col registry.Collection, id string) (*Versions, error) {
	docs, err := s.st.docsFor(id).Versions(ctx, col, id)
	if err != nil {
		return nil, err
	}
	v := &Versions{Collection: string(col), ID: id, Versions: []DocSummary{}}
	for i := len(docs) - 1; i >= 0; i-- {
		v.Versions = append(v.Versions, summarizeDoc(docs[i]))
	}
	v.Latest = docs[len(docs)-1].Data
	if col == registry.Artifacts {
		s.artifactPreview(ctx, v)
	}
	return v, nil
}

// docParams reads the collection (path or query) and id of one document.
func docParams(c echo.Context) (registry.Collection, string, error) {
	col, err := browsableCollection(c.Param("collection") + c.QueryParam("collection"))
	if err != nil {
		return "", "", err
	}
	id := c.QueryParam("id")
	if id == "" {
		return "", "", badRequest("id", "required")
	}
	return col, id, nil
}

func (s *Server) apiVersions(c echo.Context) error {
	col, id, err := docParams(c)
	if err != nil {
		return err
	}
	v, err := s.versions(c.Request().Context(), col, id)
	if err != nil {
		return storeError(err)
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) pageVersions(c echo.Context) error {
	col, id, err := docParams(c)
	if err != nil {
		return err
	}
	v, err := s.versions(c.Request().Context(), col, id)
	if err != nil {
		return storeError(err)
	}
	return s.render(c, http.StatusOK, "versions", &page{Title: id, Nav: "registry", Data: v})
}

// Diff is a line diff of two versions' JSON.
type Diff struct {
	Collection string     `json:"collection"`
	ID         string     `json:"id"`
	A          int        `json:"a"`
	B          int        `json:"b"`
	Lines      []DiffText `json:"lines"`
}

// DiffText is one line of a diff: Op is " ", "-" or "+".
type DiffText struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

func (s *Server) diff(ctx context.Context, col registry.Collection, id string, a, b int) (*Diff, error) {
	ds := s.st.docsFor(id)
	da, err := ds.Get(ctx, col, registry.Ref{ID: id, Version: a})
	if err != nil {
		return nil, err
	}
	db, err := ds.Get(ctx, col, registry.Ref{ID: id, Version: b})
	if err != nil {
		return nil, err
	}
	return &Diff{Collection: string(col), ID: id, A: da.Version, B: db.Version, Lines: lineDiff(indent(da.Data), indent(db.Data))}, nil
}

func indent(b json.RawMessage) []string {
	var buf bytes.Buffer
	if json.Indent(&buf, b, "", "  ") != nil {
		return strings.Split(string(b), "\n")
	}
	return strings.Split(buf.String(), "\n")
}

// maxDiffCells bounds the LCS table; bigger inputs get a plain
// before/after listing.
const maxDiffCells = 4_000_000

// lineDiff is a longest-common-subsequence line diff.
func lineDiff(a, b []string) []DiffText {
	out := []DiffText{}
	if len(a)*len(b) > maxDiffCells {
		for _, l := range a {
			out = append(out, DiffText{"-", l})
		}
		for _, l := range b {
			out = append(out, DiffText{"+", l})
		}
		return out
	}
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, DiffText{" ", a[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, DiffText{"-", a[i]})
			i++
		default:
			out = append(out, DiffText{"+", b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, DiffText{"-", a[i]})
	}
	for ; j < m; j++ {
		out = append(out, DiffText{"+", b[j]})
	}
	return out
}

func diffParams(c echo.Context) (registry.Collection, string, int, int, error) {
	col, id, err := docParams(c)
	if err != nil {
		return "", "", 0, 0, err
	}
	var v [2]int
	for i, name := range []string{"a", "b"} {
		if v[i], err = strconv.Atoi(c.QueryParam(name)); err != nil || v[i] < 1 {
			return "", "", 0, 0, badRequest(name, "must be a version number >= 1")
		}
	}
	return col, id, v[0], v[1], nil
}

func (s *Server) apiDiff(c echo.Context) error {
	col, id, a, b, err := diffParams(c)
	if err != nil {
		return err
	}
	d, err := s.diff(c.Request().Context(), col, id, a, b)
	if err != nil {
		return storeError(err)
	}
	return c.JSON(http.StatusOK, d)
}

func (s *Server) pageDiff(c echo.Context) error {
	col, id, a, b, err := diffParams(c)
	if err != nil {
		return err
	}
	d, err := s.diff(c.Request().Context(), col, id, a, b)
	if err != nil {
		return storeError(err)
	}
	return s.render(c, http.StatusOK, "diff", &page{Title: "Diff " + id, Nav: "registry", Data: d})
}
