package gateway

import (
	"crypto/rand"
	"encoding"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Mode is the gateway mode (GATEWAY_MODE).
type Mode string

// Gateway modes.
const (
	// ModePerformance does not serialise calls (the default).
	ModePerformance Mode = "performance"
	// ModeConsistent holds one global lock around each child call and the
	// changelog read that follows it.
	ModeConsistent Mode = "consistent"
)

// UnmarshalText validates a mode name.
func (m *Mode) UnmarshalText(b []byte) error {
	return oneOf(m, b, ModePerformance, ModeConsistent)
}

// PrefixMode is GATEWAY_TOOL_PREFIX.
type PrefixMode string

// Prefix modes.
const (
	PrefixNone   PrefixMode = "none"
	PrefixServer PrefixMode = "server"
)

// UnmarshalText validates a prefix mode.
func (p *PrefixMode) UnmarshalText(b []byte) error {
	return oneOf(p, b, PrefixNone, PrefixServer)
}

// CollisionMode is GATEWAY_TOOL_COLLISIONS.
type CollisionMode string

// Collision modes.
const (
	// CollisionSkip keeps the first server's tool and reports the later one.
	CollisionSkip CollisionMode = "skip"
	// CollisionFail fails the whole discovery (the reference behaviour).
	CollisionFail CollisionMode = "fail"
)

// UnmarshalText validates a collision mode.
func (c *CollisionMode) UnmarshalText(b []byte) error {
	return oneOf(c, b, CollisionSkip, CollisionFail)
}

// RoleAuth is GATEWAY_ROLE_TOKENS: whether agent routes require a role
// credential (see docs/security.md).
type RoleAuth string

// Role credential modes.
const (
	// RoleAuthOptional honours a role credential when one is sent and
	// otherwise trusts the AgentEnv-Role header (the default).
	RoleAuthOptional RoleAuth = "optional"
	// RoleAuthRequired refuses agent routes (/mcp, /step, /agentenv,
	// /svc/mcp-*) without a role credential or the control token (401).
	RoleAuthRequired RoleAuth = "required"
)

// UnmarshalText validates a role credential mode.
func (a *RoleAuth) UnmarshalText(b []byte) error {
	return oneOf(a, b, RoleAuthOptional, RoleAuthRequired)
}

// oneOf is the UnmarshalText of the two-valued modes above, so that they
// accept and reject alike.
func oneOf[T ~string](dst *T, b []byte, a, z T) error {
	if v := T(b); v == a || v == z {
		*dst = v
		return nil
	}
	return fmt.Errorf("must be %q or %q, got %q", a, z, b)
}

// Server is one backing MCP server of INTERNAL_MCP_SERVERS.
type Server struct {
	// Name is the INTERNAL_MCP_SERVERS name, used in /state and for prefixing.
	Name string
	// URL is the MCP endpoint, e.g. http://slack:18765/mcp.
	URL string
}

// Upstream is one REST_PROXY_URLS or WEBSITE_URLS entry.
type Upstream struct {
	// Key is the proxy key (/svc/<key>, /website/<key>).
	Key string
	// URL is the base URL, http:// or https://, without a trailing slash.
	URL string
}

// Config is the deployment configuration of a gateway, normally read from
// the environment with ConfigFromEnv. The zero value is a gateway with no
// backing servers; New fills the documented defaults for zero fields.
type Config struct {
	// Host and Port are where Run's caller should listen (MCP_HOST/MCP_PORT).
	Host string
	Port int
	// Name is MCP serverInfo.name and the card name (MCP_SERVER_NAME); "env" when empty.
	Name string
	// Servers are the backing MCP servers, in configuration order.
	Servers []Server
	// RESTProxies are the /svc upstreams and card/data-plane children.
	RESTProxies []Upstream
	// Websites are the /website upstreams.
	Websites []Upstream
	// Mode is the gateway_mode; performance when empty.
	Mode Mode
	// ServiceDBURL is the Postgres URL for changelog ids; empty disables them.
	ServiceDBURL string
	// TrajectoryFile is the JSONL trajectory path; a random /tmp/agentenv
	// file when empty.
	TrajectoryFile string
	// ServerTimeout is the readiness budget per backing server; 180 s when zero.
	ServerTimeout time.Duration
	// Prefix is the tool prefix mode; none when empty.
	Prefix PrefixMode
	// Collisions is the collision mode; skip when empty.
	Collisions CollisionMode
	// MaxBodyBytes limits control-route bodies; 8 MiB when zero.
	MaxBodyBytes int64
	// CardTTL is the composed-card cache lifetime; 5 s when zero, no cache
	// when negative.
	CardTTL time.Duration
	// TrajectoryMaxFieldBytes caps each value the trajectory stores (a
	// call's arguments, its result, each payload field of other events);
	// a larger one is replaced by a marker. 64 KiB when zero, no cap when
	// negative (GATEWAY_TRAJECTORY_MAX_FIELD_BYTES, where 0 means no cap).
	TrajectoryMaxFieldBytes int64
	// SessionIdleTimeout ends an inbound MCP session that saw no request
	// for that long (its later requests get 404, so the client
	// re-initializes). 30 min when zero, never when negative
	// (GATEWAY_SESSION_IDLE_TIMEOUT_S, where 0 means never).
	SessionIdleTimeout time.Duration
	// ControlToken, when set (GATEWAY_CONTROL_TOKEN), is required as
	// "Authorization: Bearer <token>" on /tools/*, /clock/* (but GET
	// /clock/time), /triggers/*, the data plane and /svc/mcp-*; it is also
	// the key role credentials are minted with (protocol.RoleToken).
	ControlToken string
	// RoleAuth is GATEWAY_ROLE_TOKENS; optional when empty. Required needs
	// a ControlToken.
	RoleAuth RoleAuth
}

// Defaults of the environment variables (docs/protocol.md, "Gateway
// configuration").
const (
	DefaultHost          = "0.0.0.0"
	DefaultPort          = 18765
	DefaultName          = "env"
	DefaultServerTimeout = 180 * time.Second
	DefaultMaxBodyBytes  = 8 << 20
	DefaultCardTTL       = 5 * time.Second
	// DefaultTrajectoryMaxFieldBytes and DefaultSessionIdleTimeout are ours.
	DefaultTrajectoryMaxFieldBytes = 64 << 10
	DefaultSessionIdleTimeout      = 30 * time.Minute
)

// ConfigError is a malformed configuration variable.
type ConfigError struct {
	Var    string
	Reason string
}

func (e *ConfigError) Error() string { return e.Var + ": " + e.Reason }

// ConfigFromEnv reads the variables of docs/protocol.md through getenv
// (os.Getenv in production). Every malformed value is a *ConfigError that
// names the variable.
func ConfigFromEnv(getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := &Config{
		Host: DefaultHost, Port: DefaultPort, Name: DefaultName, Mode: ModePerformance,
		ServerTimeout: DefaultServerTimeout, Prefix: PrefixNone, Collisions: CollisionSkip,
		MaxBodyBytes: DefaultMaxBodyBytes, CardTTL: DefaultCardTTL,
		TrajectoryMaxFieldBytes: DefaultTrajectoryMaxFieldBytes, SessionIdleTimeout: DefaultSessionIdleTimeout,
	}
	if v := getenv("MCP_HOST"); v != "" {
		c.Host = v
	}
	var err error
	if c.Port, err = portVar(getenv, "MCP_PORT", DefaultPort); err != nil {
		return nil, err
	}
	if v := getenv("MCP_SERVER_NAME"); v != "" {
		c.Name = v
	}
	mcpPort, err := portVar(getenv, "INTERNAL_MCP_PORT", DefaultPort)
	if err != nil {
		return nil, err
	}
	if c.Servers, err = parseServers(getenv("INTERNAL_MCP_SERVERS"), mcpPort); err != nil {
		return nil, err
	}
	if c.RESTProxies, err = parseUpstreams("REST_PROXY_URLS", getenv("REST_PROXY_URLS")); err != nil {
		return nil, err
	}
	if c.Websites, err = parseUpstreams("WEBSITE_URLS", getenv("WEBSITE_URLS")); err != nil {
		return nil, err
	}
	if err := textVar(getenv, "GATEWAY_MODE", &c.Mode); err != nil {
		return nil, err
	}
	c.ServiceDBURL = getenv("SERVICE_DB_URL")
	c.TrajectoryFile = getenv("GATEWAY_TRAJECTORY_FILE")
	if c.ServerTimeout, err = secondsVar(getenv, "GATEWAY_INTERNAL_SERVER_TIMEOUT_S", DefaultServerTimeout, false); err != nil {
		return nil, err
	}
	if err := textVar(getenv, "GATEWAY_TOOL_PREFIX", &c.Prefix); err != nil {
		return nil, err
	}
	if err := textVar(getenv, "GATEWAY_TOOL_COLLISIONS", &c.Collisions); err != nil {
		return nil, err
	}
	if v := getenv("GATEWAY_MAX_BODY_BYTES"); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n <= 0 {
			return nil, &ConfigError{"GATEWAY_MAX_BODY_BYTES", fmt.Sprintf("must be a positive integer, got %q", v)}
		}
		c.MaxBodyBytes = n
	}
	if c.CardTTL, err = secondsVar(getenv, "GATEWAY_CARD_TTL_S", DefaultCardTTL, true); err != nil {
		return nil, err
	}
	if v := getenv("GATEWAY_TRAJECTORY_MAX_FIELD_BYTES"); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return nil, &ConfigError{"GATEWAY_TRAJECTORY_MAX_FIELD_BYTES", fmt.Sprintf("must be a non-negative integer (0: no cap), got %q", v)}
		}
		c.TrajectoryMaxFieldBytes = n
		if n == 0 {
			c.TrajectoryMaxFieldBytes = -1
		}
	}
	if c.SessionIdleTimeout, err = secondsVar(getenv, "GATEWAY_SESSION_IDLE_TIMEOUT_S", DefaultSessionIdleTimeout, true); err != nil {
		return nil, err
	}
	c.ControlToken = getenv("GATEWAY_CONTROL_TOKEN")
	if err := textVar(getenv, "GATEWAY_ROLE_TOKENS", &c.RoleAuth); err != nil {
		return nil, err
	}
	return c, nil
}

// textVar reads an enumerated variable into dst, which keeps its default
// when the variable is unset.
func textVar(getenv func(string) string, name string, dst encoding.TextUnmarshaler) error {
	v := getenv(name)
	if v == "" {
		return nil
	}
	if err := dst.UnmarshalText([]byte(v)); err != nil {
		return &ConfigError{name, err.Error()}
	}
	return nil
}

func portVar(getenv func(string) string, name string, def int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > 65535 {
		return 0, &ConfigError{name, fmt.Sprintf("must be a port number 0-65535, got %q", v)}
	}
	return n, nil
}

// secondsVar reads a number of seconds (fractions allowed). zeroOK allows 0
// (for the card TTL, where 0 means "no cache").
func secondsVar(getenv func(string) string, name string, def time.Duration, zeroOK bool) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 || (f == 0 && !zeroOK) || f > 1e9 || f != f {
		return 0, &ConfigError{name, fmt.Sprintf("must be a positive number of seconds, got %q", v)}
	}
	if f == 0 {
		return -1, nil
	}
	return time.Duration(f * float64(time.Second)), nil
}

// parseServers reads INTERNAL_MCP_SERVERS: "name" → http://name:port/mcp,
// or "name=url".
func parseServers(v string, port int) ([]Server, error) {
	return parseList("INTERNAL_MCP_SERVERS", v, func(entry, n, u string, hasURL bool) (Server, string) {
		if n == "" {
			return Server{}, fmt.Sprintf("entry %q has an empty name", entry)
		}
		if !hasURL {
			u = fmt.Sprintf("http://%s:%d/mcp", n, port)
		} else if err := checkURL(u); err != nil {
			return Server{}, fmt.Sprintf("entry %q: %v", entry, err)
		}
		return Server{Name: n, URL: u}, ""
	}, func(s Server) string { return s.Name })
}

// parseUpstreams reads a comma list of key=url.
func parseUpstreams(name, v string) ([]Upstream, error) {
	return parseList(name, v, func(entry, k, u string, ok bool) (Upstream, string) {
		if !ok || k == "" {
			return Upstream{}, fmt.Sprintf("entry %q must be name=url", entry)
		}
		if strings.ContainsAny(k, "/?#%") {
			return Upstream{}, fmt.Sprintf("entry %q: name must not contain '/', '?', '#' or '%%'", entry)
		}
		if err := checkURL(u); err != nil {
			return Upstream{}, fmt.Sprintf("entry %q: %v", entry, err)
		}
		return Upstream{Key: k, URL: strings.TrimRight(u, "/")}, ""
	}, func(up Upstream) string { return up.Key })
}

// parseList is the comma-list syntax shared by INTERNAL_MCP_SERVERS,
// REST_PROXY_URLS and WEBSITE_URLS: an unset or blank value is no entries,
// an empty entry or a repeated name is an error. parse gets each trimmed
// entry cut at its first '=' (both halves trimmed) and returns the item or
// a reason, which becomes a *ConfigError on name.
func parseList[T any](name, v string, parse func(entry, key, val string, hasVal bool) (T, string), keyOf func(T) string) ([]T, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []T
	seen := map[string]bool{}
	for i, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, &ConfigError{name, fmt.Sprintf("entry %d is empty", i+1)}
		}
		k, u, ok := strings.Cut(entry, "=")
		item, reason := parse(entry, strings.TrimSpace(k), strings.TrimSpace(u), ok)
		if reason != "" {
			return nil, &ConfigError{name, reason}
		}
		key := keyOf(item)
		if seen[key] {
			return nil, &ConfigError{name, fmt.Sprintf("duplicate name %q", key)}
		}
		seen[key] = true
		out = append(out, item)
	}
	return out, nil
}

func checkURL(u string) error {
	if u == "" {
		return fmt.Errorf("empty url")
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("url %q must start with http:// or https://", u)
	}
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return fmt.Errorf("url %q is not a valid absolute URL", u)
	}
	return nil
}

// withDefaults returns a copy with every zero field defaulted.
func (c Config) withDefaults() (*Config, error) {
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if err := defaultMode(&c.Mode, ModePerformance, "GATEWAY_MODE"); err != nil {
		return nil, err
	}
	if err := defaultMode(&c.Prefix, PrefixNone, "GATEWAY_TOOL_PREFIX"); err != nil {
		return nil, err
	}
	if err := defaultMode(&c.Collisions, CollisionSkip, "GATEWAY_TOOL_COLLISIONS"); err != nil {
		return nil, err
	}
	if err := defaultMode(&c.RoleAuth, RoleAuthOptional, "GATEWAY_ROLE_TOKENS"); err != nil {
		return nil, err
	}
	if c.RoleAuth == RoleAuthRequired && c.ControlToken == "" {
		return nil, &ConfigError{"GATEWAY_ROLE_TOKENS", "required needs GATEWAY_CONTROL_TOKEN (role credentials are minted with it)"}
	}
	if c.ServerTimeout <= 0 {
		c.ServerTimeout = DefaultServerTimeout
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.CardTTL == 0 {
		c.CardTTL = DefaultCardTTL
	}
	if c.TrajectoryMaxFieldBytes == 0 {
		c.TrajectoryMaxFieldBytes = DefaultTrajectoryMaxFieldBytes
	}
	if c.SessionIdleTimeout == 0 {
		c.SessionIdleTimeout = DefaultSessionIdleTimeout
	}
	if c.TrajectoryFile == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		c.TrajectoryFile = filepath.Join(os.TempDir(), "agentenv", hex.EncodeToString(b[:])+"-trajectory.jsonl")
	}
	seen := map[string]bool{}
	for _, s := range c.Servers {
		if s.Name == "" || s.URL == "" {
			return nil, &ConfigError{"INTERNAL_MCP_SERVERS", "empty name or url"}
		}
		if seen[s.Name] {
			return nil, &ConfigError{"INTERNAL_MCP_SERVERS", fmt.Sprintf("duplicate name %q", s.Name)}
		}
		seen[s.Name] = true
	}
	c.Servers = append([]Server(nil), c.Servers...)
	c.RESTProxies = append([]Upstream(nil), c.RESTProxies...)
	c.Websites = append([]Upstream(nil), c.Websites...)
	return &c, nil
}

// defaultMode fills an empty mode field with def and checks a set one, so a
// Config built in code fails as the same variable would from the environment.
func defaultMode[T ~string, P interface {
	*T
	encoding.TextUnmarshaler
}](p P, def T, name string) error {
	if *p == "" {
		*p = def
	}
	if err := p.UnmarshalText([]byte(*p)); err != nil {
		return &ConfigError{name, err.Error()}
	}
	return nil
}
