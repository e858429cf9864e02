package envdeploy

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentenv/agentenv/internal/chromium"
	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/registry"
)

// Website workloads (docs/envtypes.md, "website").
const (
	// WebsitePort is the port a website listens on inside a group; the
	// workload is told it in $PORT (and its host in $MCP_HOST, like
	// every workload).
	WebsitePort = 8080
	// BrowserPort is the DevTools port of the website-browser.
	BrowserPort = 9222
	// BrowserName is the environment_name of the browser env, a name the
	// gateway reserves: a multi env's website of that name is its browser
	// (BROWSER_CDP_URL), not a website (WEBSITE_URLS).
	BrowserName = "website-browser"
	// MetaReadyTimeout is the website env metadata key holding its
	// readiness budget in seconds.
	MetaReadyTimeout = "ready_timeout_s"
	// DefaultWebsiteReadyTimeout is the budget when the env sets none.
	DefaultWebsiteReadyTimeout = 60 * time.Second
	// browserPackage is this module's website-browser workload.
	browserPackage = "./images/browser/agentenv-browser"
)

// WebsiteInput registers a website env (`env website put`).
type WebsiteInput struct {
	ID    string
	Image ImageInput
	// EnvironmentName is the website's name: its network alias and its
	// /website/<name> key on the gateway. Required.
	EnvironmentName string
	// ReadyTimeout bounds the wait at deploy for GET / to answer below
	// 500; DefaultWebsiteReadyTimeout when zero.
	ReadyTimeout time.Duration
	Description  string
	// files and env are added to the image built from a Go package or
	// binary (the browser's host closure).
	files, env map[string]string
}

// PutWebsite builds and registers a website env: one HTTP app that listens
// on $MCP_HOST:$PORT.
func (p *Putter) PutWebsite(ctx context.Context, in WebsiteInput) (*Env, error) {
	if err := registry.ValidateID(in.ID); err != nil {
		return nil, err
	}
	if err := ValidEnvironmentName(in.EnvironmentName); err != nil {
		return nil, err
	}
	if in.ReadyTimeout < 0 || in.ReadyTimeout > time.Hour {
		return nil, &registry.InvalidError{Field: MetaReadyTimeout, Value: in.ReadyTimeout.String(), Reason: "must be between 0 (default 60s) and 1h"}
	}
	if err := in.Image.validate(); err != nil {
		return nil, err
	}
	if in.ReadyTimeout == 0 {
		in.ReadyTimeout = DefaultWebsiteReadyTimeout
	}
	port := WebsitePort
	if in.EnvironmentName == BrowserName {
		port = BrowserPort
	}
	p.printf("Building website image (FROM scratch)...")
	env := map[string]string{"MCP_HOST": "0.0.0.0", "PORT": strconv.Itoa(port)}
	maps.Copy(env, in.env)
	res, err := p.buildImage(ctx, registry.EnvImageArtifactID(in.ID), in.Image,
		imagebuild.Image{Env: env, ExposedPorts: []int{port}, Files: in.files},
		"website image of env "+in.ID)
	if err != nil {
		return nil, err
	}
	e := Env{ID: in.ID, Type: TypeWebsite, EnvironmentName: in.EnvironmentName, ServiceName: in.EnvironmentName,
		EnvProviderType: ProviderGateway, FrontendImageArtifactRef: refOf(res.image.Header), ImageName: res.image.ImageName,
		Metadata: map[string]any{MetaReadyTimeout: int(in.ReadyTimeout.Seconds())}, Description: in.Description, Source: buildSource(in.Image)}
	if res.binary != nil {
		e.BinaryArtifactRef = refOf(res.binary.Header)
	}
	d, err := putDoc(ctx, p.Stores.docsFor(in.ID), registry.Envs, in.ID, e)
	if err != nil {
		return nil, err
	}
	e.Version = d.Version
	p.printf("Created WebsiteEnv: id=%s version=%d environment_name=%s", e.ID, e.Version, e.EnvironmentName)
	return &e, nil
}

// BrowserInput registers the browser env (`env website-browser put`).
type BrowserInput struct {
	// ID defaults to BrowserName.
	ID string
	// Image is the workload; zero = agentenv-browser built from this
	// module.
	Image ImageInput
	// HostClosure adds this host's Chromium (Debian's /usr/lib/chromium,
	// its NSS modules, fonts and their shared-library closure) to the
	// image built from Image's Go package or binary, so the browser runs
	// on Docker without any pull.
	HostClosure bool
}

// PutWebsiteBrowser registers the browser env (`env website-browser put`):
// a website env named website-browser that runs headless Chromium with
// DevTools (agentenv-browser, built from this module unless in names
// another source).
func (p *Putter) PutWebsiteBrowser(ctx context.Context, in BrowserInput) (*Env, error) {
	if in.ID == "" {
		in.ID = BrowserName
	}
	img := in.Image
	if img.GoPackage == "" && img.Binary == "" && img.Dockerfile == "" && img.ImageRef == "" {
		root, ok := moduleRoot()
		if !ok {
			return nil, &registry.InvalidError{Field: "source", Reason: "outside the agentenv source tree: give --binary (agentenv-browser) or --image-ref"}
		}
		img.GoPackage, img.GoDir = browserPackage, root
	}
	w := WebsiteInput{ID: in.ID, Image: img, EnvironmentName: BrowserName, ReadyTimeout: DefaultWebsiteReadyTimeout,
		Description: "headless Chromium with the DevTools protocol, for the gateway's computer-use tools"}
	if in.HostClosure {
		if img.ImageRef != "" || img.Dockerfile != "" {
			return nil, &registry.InvalidError{Field: "host_closure", Reason: "applies to a browser built from a Go package or binary, not to --image-ref or a Dockerfile"}
		}
		files, err := chromium.ImageFiles(ctx)
		if err != nil {
			return nil, fmt.Errorf("--host-closure: %w", err)
		}
		w.files, w.env = files, chromium.ImageEnv()
		p.printf("Adding the host's Chromium (%s) and its library closure: %d files...", chromium.LibDir, len(files))
	}
	return p.PutWebsite(ctx, w)
}

// website is one website member of a multi env being deployed.
type website struct {
	env     *Env
	src     Source
	timeout time.Duration
}

func (w website) browser() bool { return w.env.EnvironmentName == BrowserName }

func (w website) workload() Workload {
	port := WebsitePort
	if w.browser() {
		port = BrowserPort
	}
	portEnv := "PORT"
	if w.browser() {
		portEnv = "BROWSER_PORT"
	}
	return Workload{Name: w.env.EnvironmentName, Role: TypeWebsite, Source: w.src, Port: port, PortEnv: portEnv,
		Env: map[string]string{"MCP_HOST": "0.0.0.0", "WEBSITE_NAME": w.env.EnvironmentName}}
}

// websiteServerEnv tells each website where the env's MCP servers are
// (AGENTENV_MCP_SERVERS=name=<url>/mcp,...): a website may be a front end
// over them, as the example webmail is over the email server.
func websiteServerEnv(sites []Workload, names, internal []string) {
	if len(names) == 0 {
		return
	}
	list := make([]string, len(names))
	for i, n := range names {
		list[i] = n + "=" + internal[i] + "/mcp"
	}
	for _, w := range sites {
		w.Env["AGENTENV_MCP_SERVERS"] = strings.Join(list, ",")
	}
}

// readyTimeout reads the env's ready_timeout_s (a JSON number or string).
func readyTimeout(e *Env) time.Duration {
	switch v := e.Metadata[MetaReadyTimeout].(type) {
	case float64:
		if v > 0 {
			return time.Duration(v * float64(time.Second))
		}
	case int:
		if v > 0 {
			return time.Duration(v) * time.Second
		}
	case string:
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return time.Duration(n) * time.Second
		}
	}
	return DefaultWebsiteReadyTimeout
}

// resolveWebsites loads a multi env's website members.
func (d *Deployer) resolveWebsites(ctx context.Context, e *Env, servers []server) ([]website, error) {
	seen := map[string]bool{}
	for _, s := range servers {
		seen[s.env.EnvironmentName] = true
	}
	var out []website
	for _, r := range e.WebsiteEnvRefs {
		m, err := d.Stores.getEnv(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("multi env %s: website %s: %w", e.ID, r, err)
		}
		if m.Type != TypeWebsite {
			return nil, &registry.InvalidError{Field: "website_envs", Value: r.String(), Reason: "is a " + m.Type + " env, not a website"}
		}
		if seen[m.EnvironmentName] {
			return nil, &registry.InvalidError{Field: "env", Value: e.ID, Reason: "two members share environment_name " + m.EnvironmentName}
		}
		seen[m.EnvironmentName] = true
		out = append(out, website{env: m, timeout: readyTimeout(m), src: d.Stores.source(ctx, m.FrontendImageArtifactRef, m.BinaryArtifactRef,
			m.ImageName, fmt.Sprintf("website env %s v%d", m.ID, m.Version), "agent-env env website put --id "+m.ID)})
	}
	return out, nil
}

// websiteGatewayEnv adds the websites to the gateway's environment:
// WEBSITE_URLS for the websites, BROWSER_CDP_URL for the browser.
func websiteGatewayEnv(env map[string]string, sites []website, internal []string) {
	var urls []string
	for i, s := range sites {
		if s.browser() {
			env["BROWSER_CDP_URL"] = internal[i]
			continue
		}
		urls = append(urls, s.env.EnvironmentName+"="+internal[i])
	}
	if len(urls) > 0 {
		env["WEBSITE_URLS"] = strings.Join(urls, ",")
	}
}

// waitWebsites waits for each website, through the gateway's /website
// proxy, to answer GET / below 500 within its own ready_timeout_s; a
// website that does not fails the deploy naming it. The browser is
// waited for at its DevTools /json/version when the host reaches it.
func (d *Deployer) waitWebsites(ctx context.Context, g Group, gatewayURL string, sites []website, eps []Endpoint) (map[string]string, error) {
	front := map[string]string{}
	for i, s := range sites {
		name := s.env.EnvironmentName
		u := gatewayURL + "/website/" + name + "/"
		if s.browser() {
			if eps[i].Host == "" && !strings.HasPrefix(eps[i].Internal, "http://127.0.0.1:") {
				continue // not reachable from here; the gateway retries its connection
			}
			u = eps[i].Internal + "/json/version"
		} else {
			front[name] = u
		}
		what := fmt.Sprintf("website %s (env %s)", name, s.env.ID)
		err := d.poll(ctx, g, what, name, u, s.timeout, func(ctx context.Context) (bool, string, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return false, "", err
			}
			resp, err := d.httpClient().Do(req)
			if err != nil {
				return false, err.Error(), nil
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				return false, "status " + strconv.Itoa(resp.StatusCode), nil
			}
			return true, "", nil
		})
		if err != nil {
			return nil, err
		}
	}
	return front, nil
}
