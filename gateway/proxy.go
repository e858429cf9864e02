package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// upstreamProxy is the streaming reverse proxy to one REST_PROXY_URLS or
// WEBSITE_URLS entry, with one pooled transport per upstream.
type upstreamProxy struct {
	up    Upstream
	base  *url.URL
	log   *slog.Logger
	proxy *httputil.ReverseProxy
	isMCP bool
}

// hopByHop are dropped in both directions (plus anything Connection names).
var hopByHop = []string{"Host", "Connection", "Keep-Alive", "Transfer-Encoding", "Te", "Trailer", "Upgrade",
	"Proxy-Authorization", "Proxy-Authenticate", "Proxy-Connection"}

type proxyCtxKey struct{}

type proxyTarget struct {
	rest  string // raw path remainder, starting with "/" or empty
	query string
	role  string
	// dropAuth removes the Authorization header: it held the caller's
	// gateway credential, which no upstream may see.
	dropAuth bool
}

func newUpstreamProxy(u Upstream, log *slog.Logger) *upstreamProxy {
	base, _ := url.Parse(u.URL) // validated by the config
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 3600 * time.Second,
		DisableCompression:    true, // bytes pass undecoded
		ForceAttemptHTTP2:     false,
	}
	p := &upstreamProxy{up: u, base: base, log: log.With("upstream", u.Key), isMCP: strings.HasPrefix(u.Key, "mcp-")}
	p.proxy = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      tr,
		FlushInterval:  -1, // stream every chunk as it arrives
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.errorHandler,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	return p
}

// closeIdle drops the upstream's idle keep-alive connections.
func (p *upstreamProxy) closeIdle() {
	if tr, ok := p.proxy.Transport.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
}

func (p *upstreamProxy) rewrite(pr *httputil.ProxyRequest) {
	t := pr.In.Context().Value(proxyCtxKey{}).(*proxyTarget)
	out := pr.Out
	basePath := strings.TrimRight(p.base.EscapedPath(), "/")
	rawPath := basePath + t.rest
	if rawPath == "" {
		rawPath = "/"
	}
	decoded, err := url.PathUnescape(rawPath)
	if err != nil {
		decoded = rawPath
	}
	out.URL = &url.URL{Scheme: p.base.Scheme, Host: p.base.Host, Path: decoded, RawPath: rawPath, RawQuery: t.query}
	out.Host = p.base.Host
	// Every client role header is replaced by the gateway's attribution.
	out.Header.Del(protocol.HeaderRole)
	out.Header.Set(protocol.HeaderRole, t.role)
	if t.dropAuth {
		out.Header.Del("Authorization")
	}
	if _, ok := pr.In.Header["Accept-Encoding"]; !ok {
		out.Header.Set("Accept-Encoding", "identity")
	}
	for _, h := range hopByHop {
		out.Header.Del(h)
	}
	// Rewrite strips X-Forwarded-*; the reference keeps every raw header.
	for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded"} {
		if v, ok := pr.In.Header[h]; ok {
			out.Header[h] = v
		}
	}
}

func (p *upstreamProxy) modifyResponse(resp *http.Response) error {
	resp.Header.Del("Date")
	resp.Header.Del("Server")
	for _, h := range hopByHop {
		if h != "Transfer-Encoding" && h != "Trailer" {
			resp.Header.Del(h)
		}
	}
	if resp.Body != nil && resp.Body != http.NoBody {
		resp.Body = &countingBody{rc: resp.Body, log: p.log, url: resp.Request.URL.Redacted()}
	}
	return nil
}

// countingBody logs a mid-body failure as "failed after N bytes".
type countingBody struct {
	rc   io.ReadCloser
	n    atomic.Int64
	log  *slog.Logger
	url  string
	done bool
}

func (c *countingBody) Read(b []byte) (int, error) {
	n, err := c.rc.Read(b)
	c.n.Add(int64(n))
	if err != nil && err != io.EOF && !c.done {
		c.done = true
		c.log.Warn(fmt.Sprintf("proxy response failed after %d bytes", c.n.Load()), "url", c.url, "err", err)
	}
	return n, err
}

func (c *countingBody) Close() error { return c.rc.Close() }

func (p *upstreamProxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client left; nothing to answer
	}
	writeJSON(w, http.StatusBadGateway, map[string]string{"error": fmt.Sprintf("Proxy request failed: %s(%s)", errorKind(err), err)})
}

// errorKind names a proxy failure class, after httpx's exception names.
func errorKind(err error) string {
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &oe) && oe.Op == "dial":
		if oe.Timeout() {
			return "ConnectTimeout"
		}
		return "ConnectError"
	case errors.As(err, &ne) && ne.Timeout():
		return "ReadTimeout"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "RemoteProtocolError"
	}
	return "ProxyError"
}

func (g *Gateway) serveSvc(w http.ResponseWriter, r *http.Request) {
	g.serveProxy(w, r, "/svc/", g.proxies, false)
}

func (g *Gateway) serveWebsite(w http.ResponseWriter, r *http.Request) {
	g.serveProxy(w, r, "/website/", g.websites, true)
}

// serveProxy routes /svc/{service}/{path...} and /website/{service}[/...]
// on the raw request-target so encoded segments reach the upstream intact.
func (g *Gateway) serveProxy(w http.ResponseWriter, r *http.Request, prefix string, ups map[string]*upstreamProxy, bareOK bool) {
	target := r.RequestURI
	if target == "" || strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
		target = r.URL.RequestURI()
	}
	rawPath, query, _ := strings.Cut(target, "?")
	if !strings.HasPrefix(rawPath, prefix) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Not Found"})
		return
	}
	rest := rawPath[len(prefix):]
	svcRaw, remainder, hasSlash := strings.Cut(rest, "/")
	if strings.Contains(strings.ToLower(svcRaw), "%2f") {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("cannot route request-target %s: percent-encoded slash in the route prefix", target)})
		return
	}
	svc, err := url.PathUnescape(svcRaw)
	if err != nil || svc == "" {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Unknown service: " + svcRaw})
		return
	}
	if !hasSlash && !bareOK {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Not Found"})
		return
	}
	p, ok := ups[svc]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Unknown service: " + svc})
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead:
	default:
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "Method Not Allowed"})
		return
	}
	// Website upstreams (non-mcp keys, /website) take no credential: a
	// browser cannot send one, and no role rule applies there.
	who, aerr := g.attribute(r, g.cfg.RoleAuth == RoleAuthRequired && p.isMCP)
	if aerr == nil && p.isMCP && g.cfg.ControlToken != "" && !who.operator {
		// A backing server's own routes (data plane, REST) bypass role
		// rules: with a control token, only its holder reaches them.
		aerr = errControlToken
	}
	if aerr != nil {
		refuse(w, aerr, false)
		return
	}
	t := &proxyTarget{query: query, role: who.role, dropAuth: who.operator || who.credential}
	if hasSlash {
		t.rest = "/" + remainder
	}
	if p.isMCP && reachesMCP(strings.TrimRight(p.base.EscapedPath(), "/")+t.rest) {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "MCP is refused on /svc/" + svc +
			": call tools through /mcp, where role rules, triggers and the trajectory apply"})
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), proxyCtxKey{}, t))
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &endedBody{rc: r.Body}
	}
	p.proxy.ServeHTTP(w, r)
}

// endedBody answers every read after the inbound body's EOF itself. Having
// sent a Content-Length body, http.Transport reads it once more to check it
// was not longer than declared; the bytes are on the wire by then, so the
// upstream may already have answered and the gateway started relaying. But
// the HTTP/1 server drains and closes the inbound body when the response
// head goes out, so that late read fails ("invalid Read on closed Body"),
// the transport's writeLoop drops the upstream connection and the answer
// being relayed is cut (golang/go#40747): a loaded machine only makes the
// late read likelier.
type endedBody struct {
	rc  io.ReadCloser
	eof bool // read only by the transport's writeLoop
}

func (b *endedBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *endedBody) Close() error { return b.rc.Close() }

// reachesMCP reports whether a backing server could route the raw
// upstream path to its MCP endpoint (/mcp or below). It errs towards yes:
// percent-decoding is repeated, case is folded, a backslash counts as '/', ";"
// segment parameters are cut, and the path is dot- and slash-normalised, so
// that no spelling a server might fold onto /mcp gets through.
func reachesMCP(raw string) bool {
	p := raw
	for range 4 {
		dec, err := url.PathUnescape(p)
		if err != nil || dec == p {
			break
		}
		p = dec
	}
	p = strings.ToLower(strings.ReplaceAll(p, "\\", "/"))
	segs := strings.Split(p, "/")
	for i, s := range segs {
		s, _, _ = strings.Cut(s, ";")
		segs[i] = strings.TrimSpace(s)
	}
	clean := path.Clean("/" + strings.Join(segs, "/"))
	return clean == "/mcp" || strings.HasPrefix(clean, "/mcp/")
}

func marshalNoEscape(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimRight(b.Bytes(), "\n")
}
