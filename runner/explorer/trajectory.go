package explorer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentenv/agentenv/registry"
)

// A trajectory is read from the object store one page at a time: the
// first view indexes the file (where each entry starts and ends, one
// pass), later pages read only their own bytes, and only the page's
// entries are decoded, so a 50 MB trajectory reaches the browser a few
// hundred rows at a time.

// TrajectoryEntry is one entry of either trajectory format: an agent
// trajectory (a JSON array of tool_call / tool_result / final / message
// entries) or a gateway trajectory (JSONL events).
type TrajectoryEntry struct {
	Index int    `json:"index"`
	Kind  string `json:"kind"` // the entry's "type" or "event_type"
	// Text is the chat text of a message or a final answer.
	Text string `json:"text,omitempty"`
	Role string `json:"role,omitempty"`
	// Tool, Args and Result describe a tool call (its result folded in
	// when the result is the next entry of the page).
	Tool    string `json:"tool,omitempty"`
	Args    string `json:"args,omitempty"`
	Result  string `json:"result,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	// Time and VirtualTime are a gateway event's real and virtual clocks;
	// LatencyMS the time from a call to its result.
	Time        string   `json:"time,omitempty"`
	VirtualTime string   `json:"virtual_time,omitempty"`
	LatencyMS   *float64 `json:"latency_ms,omitempty"`
	EventID     string   `json:"event_id,omitempty"`
	// Source, in a merged timeline, is agent, gateway or agent+gateway
	// (an agent call the gateway recorded).
	Source string `json:"source,omitempty"`
	// Raw is the entry as stored, for kinds the viewer does not know.
	Raw json.RawMessage `json:"raw,omitempty"`
	// Images are the object URLs of the images a result links (a
	// browser_screenshot's resource_link); the page shows them through
	// /object.
	Images []string `json:"images,omitempty"`
}

// TrajectoryPage is one page of a trajectory.
type TrajectoryPage struct {
	Key    string `json:"key"`
	Format string `json:"format"` // agent | gateway | timeline (merged)
	Bytes  int64  `json:"bytes"`
	Total  int    `json:"total"` // entries matching the search
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
	// Through is the 1-based index of the page's last entry.
	Through int               `json:"through"`
	Query   string            `json:"q,omitempty"`
	Items   []TrajectoryEntry `json:"items"`
}

const (
	defaultTrajectoryLimit = 200
	maxTrajectoryLimit     = 1000
)

func (s *Server) trajectoryPage(ctx context.Context, key, q string, offset, limit int) (*TrajectoryPage, error) {
	if s.st.Objects == nil {
		return nil, fmt.Errorf("no object store is configured: %w", registry.ErrUnavailable)
	}
	rc, info, err := s.st.Objects.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	p := &TrajectoryPage{Key: key, Bytes: info.Size, Offset: offset, Limit: limit, Query: q, Items: []TrajectoryEntry{}}
	idx := s.trajs.get(key, info)
	var data []byte
	if idx == nil || q != "" {
		// One pass over the whole file: it finds every entry (the index
		// later pages reuse) and is what a search reads anyway.
		if data, err = io.ReadAll(rc); err != nil {
			return nil, err
		}
		if idx == nil {
			if idx, err = indexTrajectory(key, data); err != nil {
				return nil, err
			}
			s.trajs.put(key, info, idx)
		}
	}
	p.Format = idx.format
	var raws []json.RawMessage
	var picked []int
	if q != "" {
		needle := []byte(strings.ToLower(q))
		lower := bytes.ToLower(data)
		for i, sp := range idx.spans {
			if !bytes.Contains(lower[sp[0]:sp[1]], needle) {
				continue
			}
			if p.Total >= offset && p.Total < offset+limit {
				picked = append(picked, i)
				raws = append(raws, data[sp[0]:sp[1]])
			}
			p.Total++
		}
	} else {
		p.Total = len(idx.spans)
		if offset < len(idx.spans) {
			last := min(offset+limit, len(idx.spans)) - 1
			from, to := idx.spans[offset][0], idx.spans[last][1]
			buf := data[min(from, int64(len(data))):min(to, int64(len(data)))]
			if data == nil {
				// Only the page's bytes are read: skip to it, read through it.
				if _, err := io.CopyN(io.Discard, rc, from); err != nil {
					return nil, badTrajectory(key, err)
				}
				buf = make([]byte, to-from)
				if _, err := io.ReadFull(rc, buf); err != nil {
					return nil, badTrajectory(key, err)
				}
			}
			for i := offset; i <= last; i++ {
				picked = append(picked, i)
				raws = append(raws, buf[idx.spans[i][0]-from:idx.spans[i][1]-from])
			}
		}
	}
	for i, raw := range raws {
		p.Items = append(p.Items, decodeEntry(picked[i], raw))
	}
	p.Items = fold(p.Items)
	p.Through = min(offset+limit, p.Total)
	return p, nil
}

// trajIndex locates every entry of one trajectory file.
type trajIndex struct {
	format string     // agent | gateway
	spans  [][2]int64 // [start, end) byte offsets of each entry
}

// indexTrajectory finds the entries of a JSON array (agent) or JSONL
// (gateway) trajectory.
func indexTrajectory(key string, data []byte) (*trajIndex, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	idx := &trajIndex{format: "agent", spans: [][2]int64{}}
	switch {
	case len(trimmed) == 0:
	case trimmed[0] == '[':
		dec := json.NewDecoder(bytes.NewReader(data))
		if _, err := dec.Token(); err != nil {
			return nil, badTrajectory(key, err)
		}
		for dec.More() {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, badTrajectory(key, err)
			}
			end := dec.InputOffset()
			idx.spans = append(idx.spans, [2]int64{end - int64(len(raw)), end})
		}
		if _, err := dec.Token(); err != nil {
			return nil, badTrajectory(key, err)
		}
	default:
		idx.format = "gateway"
		var at int64
		for n := 1; len(data) > 0; n++ {
			line, rest, _ := bytes.Cut(data, []byte("\n"))
			t := bytes.TrimSpace(line)
			if len(t) > 0 {
				if !json.Valid(t) {
					return nil, badTrajectory(key, fmt.Errorf("line %d is not JSON", n))
				}
				start := at + int64(bytes.Index(line, t))
				idx.spans = append(idx.spans, [2]int64{start, start + int64(len(t))})
			}
			at += int64(len(line)) + 1
			data = rest
		}
	}
	return idx, nil
}

// trajCache keeps the indexes of the last trajectories opened, so paging
// through a large one reads one page, not the whole file, per request. An
// object whose size or time changed is indexed again.
type trajCache struct {
	mu    sync.Mutex
	items map[string]*trajCached
	order []string
}

type trajCached struct {
	size int64
	mod  time.Time
	idx  *trajIndex
}

const trajCacheSize = 16

func (c *trajCache) get(key string, info registry.ObjectInfo) *trajIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.items[key]; e != nil && e.size == info.Size && e.mod.Equal(info.LastModified) {
		return e.idx
	}
	return nil
}

func (c *trajCache) put(key string, info registry.ObjectInfo, idx *trajIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items = map[string]*trajCached{}
	}
	if _, ok := c.items[key]; !ok {
		c.order = append(c.order, key)
		if len(c.order) > trajCacheSize {
			delete(c.items, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.items[key] = &trajCached{size: info.Size, mod: info.LastModified, idx: idx}
}

func badTrajectory(key string, err error) error {
	return fmt.Errorf("trajectory %s is not a JSON array or JSONL file (%v): %w", key, err, registry.ErrInvalid)
}

func decodeEntry(i int, raw json.RawMessage) TrajectoryEntry {
	var m map[string]json.RawMessage
	e := TrajectoryEntry{Index: i}
	if json.Unmarshal(raw, &m) != nil {
		e.Kind, e.Raw = "value", raw
		return e
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(m[k], &s)
		return s
	}
	text := func(v json.RawMessage) string {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		return shortRaw(v)
	}
	if et := str("event_type"); et != "" { // gateway event
		e.Kind, e.EventID, e.Time, e.VirtualTime, e.Role = et, str("event_id"), str("timestamp_utc"), str("virtual_time"), str("role")
		switch et {
		case "tool_call", "internal_tool_call":
			var tc struct {
				FunctionName string          `json:"function_name"`
				Arguments    json.RawMessage `json:"arguments"`
			}
			_ = json.Unmarshal(m["tool_call"], &tc)
			e.Tool, e.Args = tc.FunctionName, shortRaw(tc.Arguments)
			if e.Tool == "" {
				e.Raw = raw
			}
		case "tool_call_result":
			e.Result, e.Args = shortRaw(m["tool_call_result"]), str("tool_call_event_id")
			var r struct {
				IsError bool `json:"isError"`
				Content []struct {
					Type     string `json:"type"`
					URI      string `json:"uri"`
					MIMEType string `json:"mimeType"`
				} `json:"content"`
			}
			_ = json.Unmarshal(m["tool_call_result"], &r)
			e.IsError = r.IsError
			for _, c := range r.Content {
				if c.Type == "resource_link" && strings.HasPrefix(c.MIMEType, "image/") && c.URI != "" {
					e.Images = append(e.Images, c.URI)
				}
			}
		default:
			e.Raw = raw
		}
		return e
	}
	e.Kind, e.Role = str("type"), str("role")
	switch e.Kind {
	case "tool_call":
		e.Tool, e.Args = str("name"), shortRaw(m["arguments"])
	case "tool_result":
		e.Tool, e.Result = str("name"), text(m["text"])
		_ = json.Unmarshal(m["is_error"], &e.IsError)
	case "final", "message", "text", "user", "assistant":
		e.Text = text(m["text"])
		if e.Text == "" {
			e.Text = text(m["content"])
		}
	default:
		if c, ok := m["content"]; ok && e.Role != "" {
			e.Text = text(c)
		} else {
			e.Raw = raw
		}
	}
	if e.Kind == "" {
		e.Kind = "entry"
	}
	return e
}

// fold puts each result into its call when both are on the page: an
// agent tool_result right after its tool_call, a gateway result by
// tool_call_event_id (with the latency between them).
func fold(items []TrajectoryEntry) []TrajectoryEntry {
	out := make([]TrajectoryEntry, 0, len(items))
	calls := map[string]int{} // gateway event id -> index in out
	for _, e := range items {
		switch {
		case e.Kind == "tool_result" && len(out) > 0 && out[len(out)-1].Kind == "tool_call" && out[len(out)-1].Result == "" && out[len(out)-1].Tool == e.Tool:
			out[len(out)-1].Result, out[len(out)-1].IsError = e.Result, e.IsError
			continue
		case e.Kind == "tool_call_result":
			if j, ok := calls[e.Args]; ok && out[j].Result == "" {
				out[j].Result, out[j].IsError, out[j].Images = e.Result, e.IsError, e.Images
				if a, err1 := time.Parse(time.RFC3339Nano, out[j].Time); err1 == nil {
					if b, err2 := time.Parse(time.RFC3339Nano, e.Time); err2 == nil {
						ms := float64(b.Sub(a).Microseconds()) / 1000
						out[j].LatencyMS = &ms
					}
				}
				continue
			}
		}
		if e.Kind == "tool_call" && e.EventID != "" {
			calls[e.EventID] = len(out)
		}
		out = append(out, e)
	}
	return out
}

func shortRaw(b json.RawMessage) string {
	if len(b) == 0 {
		return ""
	}
	return truncate(string(b), 4000)
}

// pageOf is one page of key, merged with the gateway trajectory gw when
// given.
func (s *Server) pageOf(ctx context.Context, key, gw, q string, offset, limit int) (*TrajectoryPage, error) {
	if gw != "" {
		return s.timelinePage(ctx, key, gw, q, offset, limit)
	}
	return s.trajectoryPage(ctx, key, q, offset, limit)
}

func parseTrajectoryParams(c echo.Context) (key, q string, offset, limit int, err error) {
	key, q = c.QueryParam("key"), c.QueryParam("q")
	if key == "" {
		return "", "", 0, 0, badRequest("key", "required (the trajectory's object key)")
	}
	if offset, limit, err = offsetLimit(c, defaultTrajectoryLimit, maxTrajectoryLimit); err != nil {
		return "", "", 0, 0, err
	}
	return key, q, offset, limit, nil
}

func (s *Server) apiTrajectory(c echo.Context) error {
	key, q, offset, limit, err := parseTrajectoryParams(c)
	if err != nil {
		return err
	}
	p, err := s.pageOf(c.Request().Context(), key, c.QueryParam("gw"), q, offset, limit)
	if err != nil {
		return storeError(err)
	}
	return c.JSON(http.StatusOK, p)
}

type trajectoryView struct {
	Key, Q, Run string
	// GW is the gateway trajectory merged in, if any.
	GW         string
	Page       *TrajectoryPage
	Err        string
	Prev, Next string
}

func (s *Server) pageTrajectory(c echo.Context) error {
	key, q, offset, limit, err := parseTrajectoryParams(c)
	if err != nil {
		return err
	}
	v := &trajectoryView{Key: key, Q: q, Run: c.QueryParam("run"), GW: c.QueryParam("gw")}
	v.Page, err = s.pageOf(c.Request().Context(), key, v.GW, q, offset, limit)
	if err != nil {
		if errors.Is(err, registry.ErrNotFound) {
			v.Err = "The trajectory " + key + " is not in the object store (deleted, or written to another store)."
		} else {
			v.Err = panelError("the trajectory", err)
		}
	} else {
		link := func(off int) string {
			u := c.Request().URL.Query()
			u.Set("offset", strconv.Itoa(off))
			u.Del("token")
			return "/trajectory?" + u.Encode()
		}
		if offset > 0 {
			v.Prev = link(max(0, offset-limit))
		}
		if offset+limit < v.Page.Total {
			v.Next = link(offset + limit)
		}
	}
	return s.render(c, http.StatusOK, "trajectory", &page{Title: "Trajectory", Nav: "runs", Data: v})
}

// ScreenshotPrefix is the object-key folder /object serves: the browser
// tools' screenshots, and nothing else of the store.
const ScreenshotPrefix = "screenshots/"

// object serves an image a trajectory links: GET /object?url=<object URL>,
// only under ScreenshotPrefix.
func (s *Server) object(c echo.Context) error {
	u := c.QueryParam("url")
	if u == "" {
		return echo.NewHTTPError(http.StatusBadRequest, "url: required")
	}
	if s.st.Objects == nil {
		return echo.NewHTTPError(http.StatusNotFound, "no object store is configured")
	}
	key, err := s.st.Objects.KeyOf(u)
	if err != nil || !strings.HasPrefix(key, ScreenshotPrefix) {
		return echo.NewHTTPError(http.StatusBadRequest, "url: not a screenshot of this object store")
	}
	rc, info, err := s.st.Objects.Open(c.Request().Context(), key)
	if errors.Is(err, registry.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "url: no object "+key)
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	ct := info.ContentType
	if !strings.HasPrefix(ct, "image/") {
		ct = "image/png"
	}
	c.Response().Header().Set("Cache-Control", "private, max-age=3600")
	return c.Stream(http.StatusOK, ct, rc)
}
