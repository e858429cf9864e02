package gateway

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFromEnvDefaults(t *testing.T) {
	c, err := ConfigFromEnv(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{Host: "0.0.0.0", Port: 18765, Name: "env", Mode: ModePerformance, ServerTimeout: 180 * time.Second,
		Prefix: PrefixNone, Collisions: CollisionSkip, MaxBodyBytes: 8388608, CardTTL: 5 * time.Second,
		TrajectoryMaxFieldBytes: 65536, SessionIdleTimeout: 30 * time.Minute}
	if d := cmp.Diff(want, c); d != "" {
		t.Fatalf("defaults (-want +got):\n%s", d)
	}
}

func TestConfigFromEnvValues(t *testing.T) {
	c, err := ConfigFromEnv(envOf(map[string]string{
		"MCP_HOST": "127.0.0.1", "MCP_PORT": "9000", "MCP_SERVER_NAME": "multi",
		"INTERNAL_MCP_SERVERS": "slack, mail=http://m:1/mcp", "INTERNAL_MCP_PORT": "8001",
		"REST_PROXY_URLS": "mcp-slack=http://slack:8001/,site=https://w.example",
		"WEBSITE_URLS":    "shop=http://shop:3000", "GATEWAY_MODE": "consistent",
		"GATEWAY_TRAJECTORY_FILE": "/var/log/agentenv/trajectory.jsonl", "GATEWAY_INTERNAL_SERVER_TIMEOUT_S": "2.5",
		"GATEWAY_TOOL_PREFIX": "server", "GATEWAY_TOOL_COLLISIONS": "fail", "GATEWAY_MAX_BODY_BYTES": "1024",
		"GATEWAY_CARD_TTL_S": "0", "SERVICE_DB_URL": "postgres://x",
		"GATEWAY_TRAJECTORY_MAX_FIELD_BYTES": "4096", "GATEWAY_SESSION_IDLE_TIMEOUT_S": "90",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{Host: "127.0.0.1", Port: 9000, Name: "multi",
		Servers:     []Server{{"slack", "http://slack:8001/mcp"}, {"mail", "http://m:1/mcp"}},
		RESTProxies: []Upstream{{"mcp-slack", "http://slack:8001"}, {"site", "https://w.example"}},
		Websites:    []Upstream{{"shop", "http://shop:3000"}}, Mode: ModeConsistent, ServiceDBURL: "postgres://x",
		TrajectoryFile: "/var/log/agentenv/trajectory.jsonl", ServerTimeout: 2500 * time.Millisecond,
		Prefix: PrefixServer, Collisions: CollisionFail, MaxBodyBytes: 1024, CardTTL: -1,
		TrajectoryMaxFieldBytes: 4096, SessionIdleTimeout: 90 * time.Second}
	if d := cmp.Diff(want, c); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

func TestConfigFromEnvErrors(t *testing.T) {
	cases := []struct {
		env     map[string]string
		varName string
		text    string
	}{
		{map[string]string{"INTERNAL_MCP_SERVERS": "a,,b"}, "INTERNAL_MCP_SERVERS", "empty"},
		{map[string]string{"INTERNAL_MCP_SERVERS": "=http://x"}, "INTERNAL_MCP_SERVERS", "empty name"},
		{map[string]string{"INTERNAL_MCP_SERVERS": "a=,b"}, "INTERNAL_MCP_SERVERS", "empty url"},
		{map[string]string{"INTERNAL_MCP_SERVERS": "a,a=http://x/mcp"}, "INTERNAL_MCP_SERVERS", `duplicate name "a"`},
		{map[string]string{"INTERNAL_MCP_SERVERS": "a=ftp://x"}, "INTERNAL_MCP_SERVERS", "must start with http"},
		{map[string]string{"REST_PROXY_URLS": "mcp-a"}, "REST_PROXY_URLS", "name=url"},
		{map[string]string{"REST_PROXY_URLS": "a=slack:1"}, "REST_PROXY_URLS", "must start with http"},
		{map[string]string{"REST_PROXY_URLS": "a=http://x,a=http://y"}, "REST_PROXY_URLS", "duplicate"},
		{map[string]string{"REST_PROXY_URLS": "a/b=http://x"}, "REST_PROXY_URLS", "must not contain"},
		{map[string]string{"WEBSITE_URLS": "w=http://"}, "WEBSITE_URLS", "not a valid"},
		{map[string]string{"GATEWAY_MODE": "fast"}, "GATEWAY_MODE", `"fast"`},
		{map[string]string{"MCP_PORT": "http"}, "MCP_PORT", "port"},
		{map[string]string{"INTERNAL_MCP_PORT": "70000"}, "INTERNAL_MCP_PORT", "port"},
		{map[string]string{"GATEWAY_INTERNAL_SERVER_TIMEOUT_S": "0"}, "GATEWAY_INTERNAL_SERVER_TIMEOUT_S", "positive"},
		{map[string]string{"GATEWAY_INTERNAL_SERVER_TIMEOUT_S": "NaN"}, "GATEWAY_INTERNAL_SERVER_TIMEOUT_S", "positive"},
		{map[string]string{"GATEWAY_TOOL_PREFIX": "env"}, "GATEWAY_TOOL_PREFIX", "server"},
		{map[string]string{"GATEWAY_TOOL_COLLISIONS": "ignore"}, "GATEWAY_TOOL_COLLISIONS", "skip"},
		{map[string]string{"GATEWAY_MAX_BODY_BYTES": "-1"}, "GATEWAY_MAX_BODY_BYTES", "positive"},
		{map[string]string{"GATEWAY_CARD_TTL_S": "-5"}, "GATEWAY_CARD_TTL_S", "seconds"},
		{map[string]string{"GATEWAY_TRAJECTORY_MAX_FIELD_BYTES": "-1"}, "GATEWAY_TRAJECTORY_MAX_FIELD_BYTES", "non-negative"},
		{map[string]string{"GATEWAY_TRAJECTORY_MAX_FIELD_BYTES": "64k"}, "GATEWAY_TRAJECTORY_MAX_FIELD_BYTES", "integer"},
		{map[string]string{"GATEWAY_SESSION_IDLE_TIMEOUT_S": "soon"}, "GATEWAY_SESSION_IDLE_TIMEOUT_S", "seconds"},
	}
	for _, tc := range cases {
		_, err := ConfigFromEnv(envOf(tc.env))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Var != tc.varName || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%v: err = %v; want a ConfigError on %s mentioning %q", tc.env, err, tc.varName, tc.text)
		}
	}
}

// Zero means "no cap" and "never" in the environment, as for the card TTL.
func TestConfigFromEnvZeroDisables(t *testing.T) {
	c, err := ConfigFromEnv(envOf(map[string]string{"GATEWAY_TRAJECTORY_MAX_FIELD_BYTES": "0", "GATEWAY_SESSION_IDLE_TIMEOUT_S": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.TrajectoryMaxFieldBytes >= 0 || c.SessionIdleTimeout >= 0 {
		t.Fatalf("0 should disable: max field %d, idle timeout %s", c.TrajectoryMaxFieldBytes, c.SessionIdleTimeout)
	}
}

func TestNewRejectsContradictoryConfig(t *testing.T) {
	_, err := New(&Config{Servers: []Server{{"a", "http://x/mcp"}, {"a", "http://y/mcp"}}, TrajectoryFile: t.TempDir() + "/t.jsonl"}, nil)
	if err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("duplicate servers accepted: %v", err)
	}
	bad := []struct {
		cfg     Config
		varName string
	}{
		{Config{Mode: "fast"}, "GATEWAY_MODE"},
		{Config{Prefix: "env"}, "GATEWAY_TOOL_PREFIX"},
		{Config{Collisions: "ignore"}, "GATEWAY_TOOL_COLLISIONS"},
	}
	for _, tc := range bad {
		tc.cfg.TrajectoryFile = t.TempDir() + "/t.jsonl"
		_, err := New(&tc.cfg, nil)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Var != tc.varName {
			t.Errorf("%+v: err = %v; want a ConfigError on %s", tc.cfg, err, tc.varName)
		}
	}
}
