package envdeploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
)

// Gateway modes.
const (
	ModePerformance = "performance"
	ModeConsistent  = "consistent"
)

// TTL bounds of `env deploy --ttl-seconds`.
const (
	MinTTL     = 60 * time.Second
	MaxTTL     = 1209600 * time.Second
	DefaultTTL = 10800 * time.Second
)

// Instance statuses.
const (
	StatusDeployed = "deployed"
	StatusTornDown = "torn_down"
)

// Deployer deploys and tears down env and agent instances.
type Deployer struct {
	Stores Stores
	// Backends maps sandbox names to backends.
	Backends map[string]Backend
	// DefaultSandbox and AgentSandbox are the [sandbox] default and
	// agent_default specs (names or comma chains); "" = "docker,process".
	DefaultSandbox, AgentSandbox string
	// Gateway registers the default gateway env when it is missing;
	// nil makes a missing gateway an error.
	Gateway func(ctx context.Context) (*Env, error)
	// AutoRegisterExamples registers an unknown env id that names one of
	// Examples (built from source) instead of failing.
	AutoRegisterExamples bool
	// ReadyTimeout bounds readiness polling; 0 = 300 s.
	ReadyTimeout time.Duration
	// Persist marks resources as outliving this process (CLI deploys); a
	// test or a bundle run leaves it false so Prune reclaims them once the
	// process is gone.
	Persist bool
	// StoreID labels every group it creates (LabelStore) and scopes Prune
	// to this store's resources; "" labels none and prunes only with
	// AllStores.
	StoreID string
	Out     io.Writer
	Logger  *slog.Logger
	Now     func() time.Time
	// HTTP is the client for readiness checks; nil = a 2 s-timeout client.
	HTTP *http.Client
	// ObjectStoreDir, when set, is the root of the registry's file object
	// store: gateways on the process provider get it as
	// GATEWAY_OBJECT_STORE_DIR, so browser screenshots land where the
	// explorer reads them. Docker gateways cannot see the host folder and
	// keep screenshots in their trajectory.
	ObjectStoreDir string
}

func (d *Deployer) now() time.Time {
	if d.Now != nil {
		return d.Now().UTC()
	}
	return time.Now().UTC()
}

func (d *Deployer) log() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

func (d *Deployer) httpClient() *http.Client {
	if d.HTTP != nil {
		return d.HTTP
	}
	return &http.Client{Timeout: 2 * time.Second}
}

// labels are the labels of a group this deployer creates for instance id.
func (d *Deployer) labels(id string, expires time.Time) map[string]string {
	l := OwnerLabels(id, d.Persist, expires)
	if d.StoreID != "" {
		l[LabelStore] = d.StoreID
	}
	return l
}

// DeployRequest deploys one env.
type DeployRequest struct {
	Env         registry.Ref
	Sandbox     string // spec; "" = DefaultSandbox
	TTL         time.Duration
	GatewayMode string
	GatewayID   string // "" = default
	// EnvStateType ("" or postgres) and EnvStateInstanceID apply to
	// service_db envs only: the latter names a running state instance
	// whose data the new database starts with.
	EnvStateType       string
	EnvStateInstanceID string
}

// EnvInstance is the env_instances record.
type EnvInstance struct {
	InstanceID string `json:"instance_id"`
	EnvID      string `json:"env_id"`
	EnvVersion int    `json:"env_version"`
	EnvType    string `json:"env_type"`
	// EnvProviderType is the topology: gateway ("" in records of older
	// builds) or server (no gateway: GatewayURL, GatewayMode and
	// ControlToken are empty, and the card is the server's own).
	EnvProviderType     string            `json:"env_provider_type,omitempty"`
	Status              string            `json:"status"`
	GatewayURL          string            `json:"gateway_url"`
	MCPURL              string            `json:"mcp_url"`
	DBWebURL            *string           `json:"db_web_url"`
	DBMCPURL            *string           `json:"db_mcp_url"`
	EnvironmentCardURL  string            `json:"environment_card_url"`
	EnvironmentCard     json.RawMessage   `json:"environment_card,omitempty"`
	WebsiteFrontendURLs map[string]string `json:"website_frontend_urls"`
	GatewayMode         string            `json:"gateway_mode"`
	EnvStateInstanceIDs []string          `json:"env_state_instance_ids"`
	// DBURL is the service_db database as reached from the host (no
	// password: connections are trusted, docs/envtypes.md).
	DBURL       string         `json:"db_url,omitempty"`
	SandboxID   string         `json:"sandbox_id"`
	SandboxType string         `json:"sandbox_type"`
	SandboxIDs  map[string]any `json:"sandbox_ids"`
	// ServerName is the gateway's MCP_SERVER_NAME (also its network alias).
	ServerName string `json:"server_name"`
	// ControlToken is the gateway's GATEWAY_CONTROL_TOKEN, random per
	// instance: the runner's steps send it on control routes and mint role
	// credentials with it (protocol.RoleToken). A secret: never logged or
	// printed, and removed from run contexts' safe form.
	ControlToken string `json:"control_token,omitempty"`
	// InternalMCPURL is the MCP URL from inside the env's group: what an
	// agent joining it uses (http://<server name>:18765/mcp on Docker).
	InternalMCPURL string   `json:"internal_mcp_url"`
	MCPServers     []string `json:"mcp_servers"`
	CreatedAtUTC   string   `json:"created_at_utc"`
	ExpiresAtUTC   string   `json:"expires_at_utc"`
	TornDownAtUTC  string   `json:"torn_down_at_utc,omitempty"`
}

// ExpiresAt parses ExpiresAtUTC.
func (e *EnvInstance) ExpiresAt() time.Time {
	t, _ := time.Parse(time.RFC3339, e.ExpiresAtUTC)
	return t
}

type server struct {
	env *Env
	src Source
	// extraEnv is added to the workload's environment (a service_db's
	// DATABASE_URL).
	extraEnv map[string]string
}

// resolve loads the servers of an env.
func (d *Deployer) resolve(ctx context.Context, e *Env) ([]server, error) {
	var members []*Env
	switch e.Type {
	case TypeMCPServer:
		members = []*Env{e}
	case TypeMulti:
		// Website members are resolved by resolveWebsites.
		for _, r := range e.MCPServerRefs {
			m, err := d.Stores.getEnv(ctx, r)
			if err != nil {
				return nil, fmt.Errorf("multi env %s: member %s: %w", e.ID, r, err)
			}
			members = append(members, m)
		}
	case TypeServiceDB:
		// The db MCP server is the env's one server; its database is
		// started beside it (startStateDB).
		return []server{{env: e, src: d.Stores.source(ctx, e.DBMCPImageArtifactRef, e.BinaryArtifactRef, e.ImageName,
			fmt.Sprintf("db MCP server of env %s v%d", e.ID, e.Version), "agent-env env service-db put --id "+e.ID)}}, nil
	case TypeWebsite:
		return nil, &registry.InvalidError{Field: "env", Value: e.ID, Reason: "is a website env, which deploys inside a multi env (agent-env env multi put --website " + e.ID + ")"}
	default:
		return nil, &registry.InvalidError{Field: "env", Value: e.ID, Reason: "is a " + e.Type + " env; deploy an mcp_server, multi or service_db env"}
	}
	out := make([]server, 0, len(members))
	seen := map[string]bool{}
	for _, m := range members {
		if seen[m.EnvironmentName] {
			return nil, &registry.InvalidError{Field: "env", Value: e.ID, Reason: "two servers share environment_name " + m.EnvironmentName}
		}
		seen[m.EnvironmentName] = true
		out = append(out, server{env: m, src: d.Stores.source(ctx, m.DockerImageArtifactRef, m.BinaryArtifactRef, m.ImageName,
			fmt.Sprintf("env %s v%d", m.ID, m.Version), "agent-env env mcp-server put --id "+m.ID)})
	}
	return out, nil
}

// SandboxType is the type of the backend a deploy on spec ("" = the
// default) would use now, or "" when none answers.
func (d *Deployer) SandboxType(ctx context.Context, spec string) string {
	b, err := d.pick(ctx, spec, d.DefaultSandbox)
	if err != nil {
		return ""
	}
	return b.Type()
}

// pick returns the first backend of spec that answers.
func (d *Deployer) pick(ctx context.Context, spec, def string) (Backend, error) {
	if spec == "" {
		spec = def
	}
	if spec == "" {
		spec = "docker,process"
	}
	names := strings.Split(spec, ",")
	var errs []error
	for _, n := range names {
		n = strings.TrimSpace(n)
		b, ok := d.Backends[n]
		if !ok {
			known := make([]string, 0, len(d.Backends))
			for k := range d.Backends {
				known = append(known, k)
			}
			return nil, fmt.Errorf("unknown sandbox provider %q (known: %s)", n, strings.Join(known, ", "))
		}
		if err := b.Check(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
			continue
		}
		return b, nil
	}
	if len(names) == 1 {
		return nil, errs[0]
	}
	return nil, &ChainError{Errs: errs}
}

// ChainError is returned when every provider of a fallback chain failed;
// its message stays on one line.
type ChainError struct{ Errs []error }

func (e *ChainError) Error() string {
	parts := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		parts[i] = err.Error()
	}
	return fmt.Sprintf("All %d providers failed: %s", len(e.Errs), strings.Join(parts, "; "))
}

// Unwrap exposes each provider's error.
func (e *ChainError) Unwrap() []error { return e.Errs }

// groupID names the sandbox group of an instance after the instance id's
// random tail: the id starts with the env or agent id, which may hold
// characters ("@", "/") that docker names and folder names refuse.
func groupID(sandboxType, instanceID string) string {
	return sandboxType + "-" + instanceID[len(instanceID)-registry.InstanceSuffixLen:]
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func fourDigits() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(10000))
	return fmt.Sprintf("env%04d", n.Int64())
}

func (d *Deployer) printf(format string, a ...any) {
	if d.Out != nil {
		fmt.Fprintf(d.Out, format+"\n", a...)
	}
}

// gatewayEnv loads (or auto-registers) the gateway env.
func (d *Deployer) gatewayEnv(ctx context.Context, id string) (*Env, error) {
	if id == "" {
		id = DefaultGatewayID
	}
	g, err := d.Stores.getEnv(ctx, registry.Ref{ID: id})
	if errors.Is(err, registry.ErrNotFound) && id == DefaultGatewayID && d.Gateway != nil {
		d.printf("Registering the gateway image (env %s)...", id)
		return d.Gateway(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("gateway env %s: %w (register it with agent-env env gateway put --id %s)", id, err, id)
	}
	if g.Type != TypeGatewayServer {
		return nil, &registry.InvalidError{Field: "gateway", Value: id, Reason: "is a " + g.Type + " env, not a gateway_server"}
	}
	return g, nil
}

// Deploy deploys an env behind a gateway, or alone when
// its env_provider_type is server (deployServer). On any failure
// everything created is removed before the error returns.
func (d *Deployer) Deploy(ctx context.Context, req DeployRequest) (inst *EnvInstance, err error) {
	mode := req.GatewayMode
	if mode == "" {
		mode = ModePerformance
	}
	if mode != ModePerformance && mode != ModeConsistent {
		return nil, &registry.InvalidError{Field: "gateway_mode", Value: mode, Reason: "must be performance or consistent"}
	}
	ttl := req.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return nil, &registry.InvalidError{Field: "ttl_seconds", Value: strconv.Itoa(int(ttl.Seconds())), Reason: "must be between 60 and 1209600"}
	}
	// An unknown env fails first; then the provider, so that a missing
	// engine fails before an example env or the gateway is built.
	e, err := d.Stores.getEnv(ctx, req.Env)
	if err != nil && !(errors.Is(err, registry.ErrNotFound) && d.isExample(req.Env)) {
		return nil, err
	}
	b, err := d.pick(ctx, req.Sandbox, d.DefaultSandbox)
	if err != nil {
		return nil, err
	}
	if e == nil {
		if e, err = d.loadEnv(ctx, req.Env); err != nil {
			return nil, err
		}
	}
	d.printf("Found env: id=%s version=%d type=%s", e.ID, e.Version, e.Type)
	if err := CheckTopology(e); err != nil {
		return nil, fmt.Errorf("env %s: %w", e.ID, err)
	}
	if err := checkStateRequest(e, req); err != nil {
		return nil, err
	}
	if e.EnvProviderType == ProviderServer {
		if err := checkServerRequest(req); err != nil {
			return nil, err
		}
		return d.deployServer(ctx, b, e, ttl)
	}
	servers, err := d.resolve(ctx, e)
	if err != nil {
		return nil, err
	}
	sites, err := d.resolveWebsites(ctx, e, servers)
	if err != nil {
		return nil, err
	}
	gw, err := d.gatewayEnv(ctx, req.GatewayID)
	if err != nil {
		return nil, err
	}
	d.printf("Deploying (ttl=%ds, gateway_mode=%s, disk=10.0GB)...", int(ttl.Seconds()), mode)

	t0 := time.Now()
	ng, err := d.newGroup(ctx, b, e.ID, ttl)
	if err != nil {
		return nil, err
	}
	defer removePartial(ctx, ng.g, &err)
	id, now, expires, g := ng.id, ng.created, ng.expires, ng.g
	tGroup := time.Now()
	var state *stateDB
	if e.Type == TypeServiceDB {
		if state, err = d.startStateDB(ctx, b, g, e, id, req, now, expires); err != nil {
			return nil, err
		}
		servers[0].extraEnv = state.serverEnv(e)
	}

	serverName := e.Name
	if serverName == "" {
		serverName = fourDigits()
	}
	controlToken := newControlToken()
	ws := make([]Workload, len(servers))
	names := make([]string, len(servers))
	for i, s := range servers {
		name := s.env.EnvironmentName
		names[i] = name
		ws[i] = Workload{Name: name, Role: TypeMCPServer, Source: s.src, Port: MCPPort, PortEnv: "MCP_PORT",
			Env: map[string]string{"MCP_HOST": "0.0.0.0", "ENVIRONMENT_NAME": name, "SERVICE_NAME": name,
				"DATABASE_URL": "sqlite:////tmp/" + name + ".sqlite"}}
		maps.Copy(ws[i].Env, s.extraEnv)
	}
	gwSrc := d.Stores.source(ctx, gw.DockerImageArtifactRef, gw.BinaryArtifactRef, gw.ImageName,
		"gateway env "+gw.ID, "agent-env env gateway put --id "+gw.ID)
	siteWs := make([]Workload, len(sites))
	for i, s := range sites {
		siteWs[i] = s.workload()
	}
	// internal holds the servers' URLs, then the websites'.
	gateway := func(internal []string) (Workload, bool) {
		w, alias := gatewayWorkload(gwSrc, serverName, mode, controlToken, names, internal[:len(ws)])
		websiteGatewayEnv(w.Env, sites, internal[len(ws):])
		if d.ObjectStoreDir != "" && len(sites) > 0 && b.Type() == "process" {
			w.Env["GATEWAY_OBJECT_STORE_DIR"] = d.ObjectStoreDir
		}
		if state != nil {
			// The db server's web console, proxied like a website.
			console := names[0] + "=" + internal[0] + DBConsolePath
			if u := w.Env["WEBSITE_URLS"]; u != "" {
				console = u + "," + console
			}
			w.Env["WEBSITE_URLS"] = console
			// changelog_id of each call: MAX(id) of the db server's _changelog.
			w.Env["SERVICE_DB_URL"] = state.rec.InternalDBURL
		}
		return w, alias
	}
	// The servers start in parallel; the gateway with them when the
	// group knows their addresses beforehand (it waits for its children
	// itself), else once they run.
	var ep Endpoint
	var aliasForm bool
	var siteEps []Endpoint
	if planner, ok := g.(AddressPlanner); ok {
		all := append(append([]Workload(nil), ws...), siteWs...)
		internal := make([]string, len(all))
		for i, w := range all {
			internal[i] = planner.InternalURL(w)
		}
		websiteServerEnv(siteWs, names, internal[:len(ws)])
		var gwW Workload
		gwW, aliasForm = gateway(internal)
		eps, err := runAll(ctx, g, append(all, gwW))
		if err != nil {
			return nil, err
		}
		for i := range all {
			if eps[i].Internal != internal[i] {
				return nil, fmt.Errorf("workload %s runs at %s, not at the planned %s", all[i].Name, eps[i].Internal, internal[i])
			}
		}
		ep, siteEps = eps[len(all)], eps[len(ws):len(all)]
	} else {
		// Websites learn the servers' addresses, so they start second.
		eps, err := runAll(ctx, g, ws)
		if err != nil {
			return nil, err
		}
		internal := make([]string, len(eps))
		for i, e := range eps {
			internal[i] = e.Internal
		}
		websiteServerEnv(siteWs, names, internal)
		if siteEps, err = runAll(ctx, g, siteWs); err != nil {
			return nil, err
		}
		for _, e := range siteEps {
			internal = append(internal, e.Internal)
		}
		var gwW Workload
		gwW, aliasForm = gateway(internal)
		if ep, err = g.Run(ctx, gwW); err != nil {
			return nil, err
		}
	}
	tRun := time.Now()
	cardURL := ep.Host + protocol.EnvCardPath
	card, err := d.waitCard(ctx, g, cardURL, len(servers), controlToken)
	if err != nil {
		return nil, err
	}
	frontends, err := d.waitWebsites(ctx, g, ep.Host, sites, siteEps)
	if err != nil {
		return nil, err
	}
	d.log().Debug("env deployed", "instance", id, "servers", len(servers), "group", tGroup.Sub(t0),
		"workloads", tRun.Sub(tGroup), "ready", time.Since(tRun))
	mcpPath := protocol.DefaultMCPPath
	var parsed protocol.EnvCard
	if json.Unmarshal(card, &parsed) == nil {
		mcpPath = parsed.MCPPath()
	}
	inst = &EnvInstance{InstanceID: id, EnvID: e.ID, EnvVersion: e.Version, EnvType: e.Type, Status: StatusDeployed,
		GatewayURL: ep.Host, MCPURL: ep.Host + mcpPath, EnvironmentCardURL: cardURL, EnvironmentCard: card,
		EnvProviderType: ProviderGateway, WebsiteFrontendURLs: frontends, GatewayMode: mode, EnvStateInstanceIDs: []string{},
		SandboxID: g.ID(), SandboxType: b.Type(), SandboxIDs: map[string]any{"gateway": g.ID()},
		ServerName: serverName, ControlToken: controlToken, InternalMCPURL: aliasURL(ep.Internal, serverName, aliasForm) + mcpPath, MCPServers: names,
		CreatedAtUTC: now.Format(time.RFC3339), ExpiresAtUTC: expires.Format(time.RFC3339)}
	if state != nil {
		mcpURL := inst.MCPURL
		webURL := ep.Host + "/website/" + names[0] + "/"
		inst.DBMCPURL, inst.DBURL, inst.DBWebURL = &mcpURL, state.rec.DBURL, &webURL
		inst.EnvStateInstanceIDs = []string{state.rec.EnvStateInstanceID}
		if err := state.store(ctx, d.Stores.Docs); err != nil {
			return nil, err
		}
	}
	body, _ := json.Marshal(inst)
	if _, err := d.Stores.Docs.InsertRecord(ctx, registry.EnvInstances, id, body); err != nil {
		return nil, fmt.Errorf("record env instance: %w", err)
	}
	return inst, nil
}

// gatewayWorkload is the gateway of servers names, reached inside the
// group at internal; aliasForm reports whether they are reached by name
// (http://<name>:18765), which lets the gateway list them by name alone.
func gatewayWorkload(src Source, serverName, mode, controlToken string, names, internal []string) (w Workload, aliasForm bool) {
	aliasForm = true
	var internalServers, proxies []string
	for i, n := range names {
		if internal[i] != "http://"+n+":"+strconv.Itoa(MCPPort) {
			aliasForm = false
		}
		internalServers = append(internalServers, n+"="+internal[i]+"/mcp")
		proxies = append(proxies, "mcp-"+n+"="+internal[i])
	}
	env := map[string]string{"MCP_HOST": "0.0.0.0", "MCP_SERVER_NAME": serverName,
		"INTERNAL_MCP_PORT": strconv.Itoa(MCPPort), "REST_PROXY_URLS": strings.Join(proxies, ","), "GATEWAY_MODE": mode,
		"GATEWAY_TRAJECTORY_FILE": "/var/log/agentenv/trajectory.jsonl",
		// Agents get only the MCP URL and their role credential; the
		// control token stays with the runner (docs/security.md).
		"GATEWAY_CONTROL_TOKEN": controlToken, "GATEWAY_ROLE_TOKENS": "required"}
	if aliasForm {
		env["INTERNAL_MCP_SERVERS"] = strings.Join(names, ",")
	} else {
		env["INTERNAL_MCP_SERVERS"] = strings.Join(internalServers, ",")
		env["GATEWAY_TRAJECTORY_FILE"] = "trajectory.jsonl" // relative to the process's folder
	}
	return Workload{Name: "gateway", Aliases: []string{serverName}, Role: "gateway", Source: src,
		Port: MCPPort, PortEnv: "MCP_PORT", Publish: true, Env: env}, aliasForm
}

// runAll runs ws in g concurrently. The first failure cancels the runs
// still in flight, and runAll returns only once every Run has returned,
// so the caller's Terminate sees every workload that was created.
func runAll(ctx context.Context, g Group, ws []Workload) ([]Endpoint, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	eps := make([]Endpoint, len(ws))
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			eps[i], errs[i] = g.Run(rctx, w)
			if errs[i] != nil {
				cancel(errs[i])
			}
		}()
	}
	wg.Wait()
	if errors.Join(errs...) == nil {
		return eps, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// Runs cut short by a sibling's failure add nothing to its error.
	var own []error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			own = append(own, err)
		}
	}
	if len(own) == 0 {
		return nil, context.Cause(rctx)
	}
	return nil, errors.Join(own...)
}

// instanceGroup is the group of a new instance of owner (an env or agent id)
// on b, expiring after ttl.
type instanceGroup struct {
	id               string // the instance id
	created, expires time.Time
	g                Group
}

// newGroup mints an instance id for owner and creates its group on b.
func (d *Deployer) newGroup(ctx context.Context, b Backend, owner string, ttl time.Duration) (*instanceGroup, error) {
	ng := &instanceGroup{id: registry.NewInstanceID(owner), created: d.now()}
	ng.expires = ng.created.Add(ttl)
	g, err := b.CreateGroup(ctx, GroupSpec{ID: groupID(b.Type(), ng.id), Labels: d.labels(ng.id, ng.expires)})
	if err != nil {
		return nil, err
	}
	ng.g = g
	return ng, nil
}

// removePartial removes the group of a deploy that failed with *err (a
// deferred call; nothing when *err is nil), on a fresh bounded context,
// and adds the removal's own failure to *err.
func removePartial(ctx context.Context, g Group, err *error) {
	if *err == nil {
		return
	}
	cctx, cancel := CleanupContext(ctx)
	defer cancel()
	if terr := g.Terminate(cctx); terr != nil {
		*err = fmt.Errorf("%w (and removing the partial deploy failed: %v)", *err, terr)
	}
}

// newControlToken is a fresh 256-bit gateway control token.
func newControlToken() string { return randomHex(32) }

// aliasURL replaces the workload name of an internal URL with alias when
// the backend resolves aliases.
func aliasURL(internal, alias string, aliasForm bool) string {
	if !aliasForm {
		return internal
	}
	return "http://" + alias + ":" + strconv.Itoa(MCPPort)
}

// waitCard polls the gateway card until it answers below 500 and lists
// every child (≤ ReadyTimeout), with backoff.
func (d *Deployer) waitCard(ctx context.Context, g Group, u string, children int, controlToken string) (json.RawMessage, error) {
	timeout := d.ReadyTimeout
	if timeout == 0 {
		timeout = 300 * time.Second
	}
	var card json.RawMessage
	err := d.poll(ctx, g, "gateway", "gateway", u, timeout, func(ctx context.Context) (bool, string, error) {
		status, b, err := d.getCard(ctx, u)
		if err != nil {
			return false, err.Error(), nil
		}
		if status >= 500 {
			return false, "status " + strconv.Itoa(status), nil
		}
		var c protocol.EnvCard
		if json.Unmarshal(b, &c) != nil || len(c.ChildrenEnvironments) < children {
			return false, fmt.Sprintf("card lists %d of %d servers", len(c.ChildrenEnvironments), children), nil
		}
		// The card can list a child before the gateway's tool discovery
		// has its tools: list them once and wait
		// for every advertised tool.
		missing, err := d.missingTools(ctx, strings.TrimSuffix(u, protocol.EnvCardPath), controlToken, &c)
		if err != nil {
			return false, "list_tools: " + err.Error(), nil
		}
		if len(missing) > 0 {
			return false, "tools not discovered yet: " + strings.Join(missing, ", "), nil
		}
		card = b
		return true, "", nil
	})
	return card, err
}

// getCard reads the card at u (at most 4 MiB).
func (d *Deployer) getCard(ctx context.Context, u string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := d.httpClient().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, b, err
}

// record finds a record in Docs, then RecordsAlso.
func (d *Deployer) record(ctx context.Context, c registry.Collection, id string) (registry.Record, registry.DocumentStore, error) {
	stores := append([]registry.DocumentStore{d.Stores.Docs}, d.Stores.RecordsAlso...)
	var first error
	for _, s := range stores {
		if s == nil {
			continue
		}
		r, err := s.GetRecord(ctx, c, id)
		if err == nil {
			return r, s, nil
		}
		if first == nil || !errors.Is(err, registry.ErrNotFound) {
			first = err
		}
	}
	return registry.Record{}, nil, first
}

// missingTools lists the tools the child cards advertise that the
// gateway's /step list_tools does not expose yet.
func (d *Deployer) missingTools(ctx context.Context, gateway, controlToken string, c *protocol.EnvCard) ([]string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gateway+"/step", strings.NewReader(`{"action":"list_tools"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+controlToken)
	resp, err := d.httpClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var out struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, t := range out.Tools {
		have[t.Name] = true
	}
	var missing []string
	for _, child := range c.ChildrenEnvironments {
		for _, t := range child.Capabilities.Tools {
			if !have[t.Name] && !have[child.Name+"_"+t.Name] && !have[child.Name+"__"+t.Name] {
				missing = append(missing, t.Name)
			}
		}
	}
	return missing, nil
}

// GetInstance reads an env instance record.
func (d *Deployer) GetInstance(ctx context.Context, id string) (*EnvInstance, error) {
	r, _, err := d.record(ctx, registry.EnvInstances, id)
	if err != nil {
		return nil, err
	}
	var inst EnvInstance
	if err := r.Decode(&inst); err != nil {
		return nil, err
	}
	return &inst, nil
}

// Teardown removes an env instance's group and marks its record torn
// down; it is idempotent. An unknown id is a registry.ErrNotFound error.
func (d *Deployer) Teardown(ctx context.Context, id string) error {
	inst, err := d.GetInstance(ctx, id)
	if err != nil {
		return err
	}
	if err := d.terminate(ctx, inst.SandboxType, inst.SandboxID); err != nil {
		return err
	}
	for _, sid := range inst.EnvStateInstanceIDs {
		if err := d.markTornDown(ctx, registry.EnvStateInstances, sid); err != nil && !errors.Is(err, registry.ErrNotFound) {
			return err
		}
	}
	return d.markTornDown(ctx, registry.EnvInstances, id)
}

func (d *Deployer) terminate(ctx context.Context, typ, groupID string) error {
	b, ok := d.Backends[typ]
	if !ok {
		return fmt.Errorf("instance runs on sandbox %q, which is not configured", typ)
	}
	g, err := b.OpenGroup(ctx, groupID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return g.Terminate(ctx)
}

func (d *Deployer) markTornDown(ctx context.Context, c registry.Collection, id string) error {
	now := d.now().Format(time.RFC3339)
	_, store, err := d.record(ctx, c, id)
	if err != nil {
		return err
	}
	_, err = store.UpdateRecord(ctx, c, id, func(doc map[string]any) error {
		if doc["status"] == StatusTornDown {
			return registry.ErrNoChange
		}
		doc["status"] = StatusTornDown
		doc["torn_down_at_utc"] = now
		return nil
	})
	return err
}
