// Package syncenvclock is the sync_env_clock step: arm a deployed env's
// gateway clock (set_time) and point every backing server that advertises
// the clock extension at the gateway's time URL.
// The result is recorded in metadata.env_clock_syncs[<step_id>].
package syncenvclock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/agentenv/agentenv/envsdk/envclient"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// Type is the step type name.
const Type = "sync_env_clock"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields.
type Config struct {
	EnvID                       string   `json:"env_id"`
	EnvStepID                   string   `json:"env_step_id,omitempty"`
	VirtualTime                 string   `json:"virtual_time"`
	VirtualSecondsPerRealSecond *float64 `json:"virtual_seconds_per_real_second,omitempty"` // 1.0
	TolerateMissingSyncTime     *bool    `json:"tolerate_missing_sync_time,omitempty"`      // true
	TimeoutSeconds              *float64 `json:"timeout_seconds,omitempty"`                 // 30
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.EnvRef("env_id")}
}

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.EnvID == "" {
		return runner.Required("env_id")
	}
	if c.VirtualTime == "" {
		return runner.Required("virtual_time")
	}
	if _, err := time.Parse(time.RFC3339Nano, c.VirtualTime); err != nil {
		return runner.Invalid("virtual_time", "must be an RFC 3339 time, got %q", c.VirtualTime)
	}
	if r := c.VirtualSecondsPerRealSecond; r != nil && (*r < 0 || *r > 86400) {
		return runner.Invalid("virtual_seconds_per_real_second", "must be between 0 and 86400")
	}
	if c.TimeoutSeconds != nil && *c.TimeoutSeconds <= 0 {
		return runner.Invalid("timeout_seconds", "must be positive")
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	env, err := gwclient.ForGateway(rc, c.EnvID, c.EnvStepID, Type, "the virtual clock and its time URL")
	if err != nil {
		return err
	}
	var card protocol.EnvCard
	raw, _ := json.Marshal(env.Entry["environment_card"])
	if err := json.Unmarshal(raw, &card); err != nil {
		return fmt.Errorf("env %s: environment card: %w", c.EnvID, err)
	}
	if envclient.FindExtensionMethod(&card, protocol.URIClock, "set_time") == nil {
		return fmt.Errorf("env %s: the gateway card does not advertise the clock extension's set_time method", c.EnvID)
	}
	timeout := 30 * time.Second
	if c.TimeoutSeconds != nil {
		timeout = time.Duration(*c.TimeoutSeconds * float64(time.Second))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rate := 1.0
	if c.VirtualSecondsPerRealSecond != nil {
		rate = *c.VirtualSecondsPerRealSecond
	}
	gw := env.Gateway.Card()
	armed, err := gw.InvokeExtension(ctx, &card, protocol.URIClock,
		map[string]any{"virtual_time": c.VirtualTime, "virtual_seconds_per_real_second": rate}, "set_time")
	if err != nil {
		var he *envclient.HTTPError
		if errors.As(err, &he) {
			return fmt.Errorf("clock arm failed (HTTP %d): %s", he.Status, he.Body)
		}
		return fmt.Errorf("clock arm failed: %w", err)
	}
	stRaw, err := gw.InvokeExtension(ctx, &card, protocol.URIClock, nil, "state")
	if err != nil {
		return fmt.Errorf("clock state: %w", err)
	}
	var st struct {
		URL string `json:"env_get_time_url"`
	}
	_ = json.Unmarshal(stRaw, &st)
	st.URL = reachable(st.URL, env)
	tolerate := c.TolerateMissingSyncTime == nil || *c.TolerateMissingSyncTime
	children := map[string]any{}
	for _, s := range env.Servers {
		child := env.Server(s)
		cc, err := child.GetCard(ctx)
		if err != nil {
			children[s] = map[string]any{"status": "no_env_card", "error": err.Error()}
			continue
		}
		e := cc.FindExtension(protocol.URIClock)
		if e == nil {
			children[s] = map[string]any{"status": "not_advertised"}
			continue
		}
		p, err := e.MethodParams()
		names := []string{}
		if err == nil {
			names = p.MethodNames()
		}
		if len(names) == 0 {
			children[s] = map[string]any{"status": "not_advertised"}
			continue
		}
		if st.URL == "" {
			if !tolerate {
				return fmt.Errorf("env %s: the gateway's clock state has no env_get_time_url to sync %s with", c.EnvID, s)
			}
			children[s] = map[string]any{"status": "no_sync_time"}
			continue
		}
		if _, err := child.InvokeExtension(ctx, cc, protocol.URIClock, map[string]any{"env_get_time_url": st.URL}, names[0]); err != nil {
			return fmt.Errorf("env %s server %s: clock sync: %w", c.EnvID, s, err)
		}
		children[s] = map[string]any{"status": "synced"}
	}
	var armedV any
	_ = json.Unmarshal(armed, &armedV)
	rc.SetMetadataEntry("env_clock_syncs", rc.StepID(), map[string]any{"env_id": c.EnvID, "armed": armedV,
		"env_get_time_url": st.URL, "children": children})
	return nil
}

// reachable fixes env_get_time_url for backends whose servers do not
// resolve the gateway's container name: on the process sandbox every
// workload is a local process, so the servers reach the gateway at its
// host URL. (The gateway names itself "gateway", right for Docker.)
func reachable(u string, env *gwclient.Env) string {
	if st, _ := env.Entry["sandbox_type"].(string); st != "process" || u == "" {
		return u
	}
	parsed, err := url.Parse(u)
	if err != nil {
		return u
	}
	gw, err := url.Parse(env.Gateway.Base())
	if err != nil {
		return u
	}
	parsed.Scheme, parsed.Host = gw.Scheme, gw.Host
	return parsed.String()
}
