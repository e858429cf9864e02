package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// gatewayMethod is one method of a gateway-owned extension.
type gatewayMethod struct {
	name, verb, endpoint string
	request              string
}

type gatewayExtension struct {
	uri, description string
	methods          []gatewayMethod
}

const setTimeRequestSchema = `{"type":"object","properties":{"virtual_time":{"type":"string","format":"date-time"},"virtual_seconds_per_real_second":{"type":["number","null"],"minimum":0,"maximum":86400}},"required":["virtual_time"]}`

// gatewayExtensions are the seven extensions of the composed card, in the
// spec's order. Every (endpoint, verb) here is a served route.
var gatewayExtensions = []gatewayExtension{
	{protocol.URIDisableTool, "Disable tools for a role.", []gatewayMethod{{"disable", "POST", "/tools/disable", ""}}},
	{protocol.URIEnableTool, "Enable tools for a role.", []gatewayMethod{{"enable", "POST", "/tools/enable", ""}}},
	{protocol.URITriggers, "Register, remove, clear and inspect triggers.", []gatewayMethod{
		{"register", "POST", "/triggers/register", ""}, {"remove", "POST", "/triggers/remove", ""},
		{"clear", "POST", "/triggers/clear", ""}, {"state", "GET", "/triggers/state", ""}}},
	{protocol.URIClock, "Virtual clock of the environment.", []gatewayMethod{
		{"get_time", "GET", "/clock/time", ""}, {"set_time", "PUT", "/clock/set-time", setTimeRequestSchema},
		{"clear", "POST", "/clock/clear", ""}, {"state", "GET", "/clock/state", ""}}},
	{protocol.URITrajectory, "Env trajectory as JSONL.", []gatewayMethod{{"get", "GET", "/trajectory", ""}}},
	{protocol.URIStep, "List or call tools over REST.", []gatewayMethod{{"step", "POST", "/step", protocol.StepRequestSchema}}},
	{protocol.URIState, "Tools by server, changelog id and role rules.", []gatewayMethod{{"get", "GET", "/state", ""}}},
}

func (e gatewayExtension) extension() protocol.Extension {
	p := protocol.ExtensionParams{Endpoint: e.methods[0].endpoint, Methods: []protocol.ExtensionMethod{}}
	for _, m := range e.methods {
		em := protocol.ExtensionMethod{Name: m.name, Method: m.verb}
		if m.endpoint != p.Endpoint {
			em.Endpoint = m.endpoint
		}
		if m.request != "" {
			em.Request = json.RawMessage(m.request)
		}
		p.Methods = append(p.Methods, em)
	}
	raw, _ := json.Marshal(p)
	f := false
	return protocol.Extension{URI: e.uri, Description: e.description, Params: raw, Required: &f}
}

// gatewayOwned reports whether the gateway's own extension uri has a method
// with this name, verb and endpoint.
func gatewayOwned(uri, name, verb, endpoint string) bool {
	for _, e := range gatewayExtensions {
		if e.uri != uri {
			continue
		}
		for _, m := range e.methods {
			if m.name == name && m.verb == verb && m.endpoint == endpoint {
				return true
			}
		}
	}
	return false
}

// rewriteChild rewrites a child card for composition ("Child
// rewrite"); the input is never mutated.
func rewriteChild(key string, in protocol.EnvCard) protocol.EnvCard {
	prefix := "/svc/" + key
	pathLike := func(s string) bool { return strings.HasPrefix(s, "/") }
	out := in
	u := in.URL
	if u == "" {
		u = protocol.DataPlanePath
	}
	if pathLike(u) {
		u = strings.TrimRight(prefix+u, "/")
	}
	out.URL = u
	out.AdditionalInterfaces = []protocol.Interface{}
	out.ChildrenEnvironments = nil
	if in.Capabilities.Extensions != nil {
		out.Capabilities.Extensions = make([]protocol.Extension, len(in.Capabilities.Extensions))
	}
	for i, ext := range in.Capabilities.Extensions {
		out.Capabilities.Extensions[i] = ext
		if len(ext.Params) == 0 {
			continue
		}
		p, err := ext.MethodParams()
		if err != nil {
			continue // not REST-shaped params: leave them as they are
		}
		owned := make([]bool, len(p.Methods))
		ownedUsesExt := false
		for j, m := range p.Methods {
			eff := m.Endpoint
			if eff == "" {
				eff = p.Endpoint
			}
			owned[j] = gatewayOwned(ext.URI, m.Name, m.Verb(), eff)
			if owned[j] && m.Endpoint == "" {
				ownedUsesExt = true
			}
		}
		np := protocol.ExtensionParams{Endpoint: p.Endpoint, Extra: p.Extra}
		if p.Methods != nil {
			np.Methods = make([]protocol.ExtensionMethod, len(p.Methods))
		}
		for j, m := range p.Methods {
			nm := m
			switch {
			case owned[j]:
			case m.Endpoint != "":
				if pathLike(m.Endpoint) {
					nm.Endpoint = prefix + m.Endpoint
				}
			case ownedUsesExt && pathLike(p.Endpoint):
				// The extension endpoint stays the gateway's; this
				// child-served method gets its own prefixed endpoint.
				nm.Endpoint = prefix + p.Endpoint
			}
			np.Methods[j] = nm
		}
		if !ownedUsesExt && pathLike(p.Endpoint) {
			np.Endpoint = prefix + p.Endpoint
		}
		raw, err := json.Marshal(np)
		if err != nil {
			continue
		}
		out.Capabilities.Extensions[i].Params = raw
	}
	return out
}

// cardCache serves the composed card, cached for GATEWAY_CARD_TTL_S and
// revalidated in the background (stale-while-revalidate); a cold cache is
// filled synchronously by one caller.
type cardCache struct {
	g *Gateway

	mu         sync.Mutex
	body       []byte
	at         time.Time
	refreshing bool
	fill       chan struct{}
}

func newCardCache(g *Gateway) *cardCache { return &cardCache{g: g} }

// serve answers with the cached card and a strong ETag, so pollers (the
// provider's readiness probe, runners) can revalidate with If-None-Match.
func (c *cardCache) serve(w http.ResponseWriter, r *http.Request) {
	body := c.get(r.Context())
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && (inm == etag || inm == "*") {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(body)
}

func (c *cardCache) get(ctx context.Context) []byte {
	ttl := c.g.cfg.CardTTL
	if ttl < 0 {
		return c.build(ctx)
	}
	for {
		c.mu.Lock()
		if c.body != nil {
			body := c.body
			if time.Since(c.at) > ttl && !c.refreshing {
				c.refreshing = true
				go c.refresh()
			}
			c.mu.Unlock()
			return body
		}
		if c.fill != nil {
			wait := c.fill
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return c.build(context.Background())
			}
		}
		c.fill = make(chan struct{})
		c.mu.Unlock()
		body := c.build(ctx)
		c.mu.Lock()
		c.body, c.at = body, time.Now()
		close(c.fill)
		c.fill = nil
		c.mu.Unlock()
		return body
	}
}

func (c *cardCache) refresh() {
	ctx, cancel := context.WithTimeout(c.g.life, 10*time.Second)
	defer cancel()
	body := c.build(ctx)
	c.mu.Lock()
	c.body, c.at, c.refreshing = body, time.Now(), false
	c.mu.Unlock()
}

// invalidate schedules a background rebuild (after re-discovery).
func (c *cardCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.body != nil && !c.refreshing {
		c.refreshing = true
		go c.refresh()
	}
}

// build composes the card: the gateway's seven extensions and every
// REST_PROXY_URLS child that serves a v1 card, rewritten.
func (c *cardCache) build(ctx context.Context) []byte {
	g := c.g
	card := protocol.EnvCard{
		Name: g.cfg.Name, ProtocolVersion: protocol.EnvProtocolVersion, URL: protocol.DataPlanePath,
		PreferredTransport:   protocol.TransportJSONRPC,
		AdditionalInterfaces: []protocol.Interface{{URL: protocol.DefaultMCPPath, Transport: protocol.TransportMCP}},
		ChildrenEnvironments: []protocol.EnvCard{},
	}
	for _, e := range gatewayExtensions {
		card.Capabilities.Extensions = append(card.Capabilities.Extensions, e.extension())
	}
	children := make([]*protocol.EnvCard, len(g.cfg.RESTProxies))
	var wg sync.WaitGroup
	for i, u := range g.cfg.RESTProxies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			children[i] = g.fetchChildCard(ctx, u)
		}()
	}
	wg.Wait()
	for i, ch := range children {
		if ch != nil {
			card.ChildrenEnvironments = append(card.ChildrenEnvironments, rewriteChild(g.cfg.RESTProxies[i].Key, *ch))
		}
	}
	b, err := json.Marshal(card)
	if err != nil {
		g.log.Error("cannot encode composed card", "err", err)
		return []byte(`{}`)
	}
	return b
}

// fetchChildCard GETs a child's card; any failure omits the child.
func (g *Gateway) fetchChildCard(ctx context.Context, u Upstream) *protocol.EnvCard {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.URL+protocol.EnvCardPath, nil)
	if err != nil {
		return nil
	}
	resp, err := g.httpc.Do(req)
	if err != nil {
		g.log.Debug("child card unavailable", "child", u.Key, "err", err)
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil
	}
	card, err := protocol.DecodeEnvCard(b)
	if err != nil {
		g.log.Debug("child card malformed; omitted", "child", u.Key, "err", err)
		return nil
	}
	return card
}
