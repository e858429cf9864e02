package applyserverconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentenv/agentenv/envsdk/envclient"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// Type is the step type name.
const Type = "apply_server_config"

// Broadcast is the service name that stands for every server of the env.
const Broadcast = "*"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Directive is one extension call on one server (or on every server).
type Directive struct {
	Service     string         `json:"service,omitempty"`
	Environment string         `json:"environment,omitempty"` // the same as service, newer spelling
	URI         string         `json:"uri"`
	Args        map[string]any `json:"args,omitempty"`
}

// server is the directive's target: service, else environment.
func (d Directive) server() string {
	if d.Service != "" {
		return d.Service
	}
	return d.Environment
}

// Config is the step's fields.
type Config struct {
	EnvID                string      `json:"env_id"`
	EnvStepID            string      `json:"env_step_id,omitempty"`
	Directives           []Directive `json:"directives"`
	TimeoutSeconds       *float64    `json:"timeout_seconds,omitempty"` // 30, per call
	TolerateUnadvertised bool        `json:"tolerate_unadvertised,omitempty"`
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

// Validate implements runner.Validator; every bad directive is reported.
func (c *Config) Validate() error {
	var errs []error
	if c.EnvID == "" {
		errs = append(errs, runner.Required("env_id"))
	}
	if len(c.Directives) == 0 {
		errs = append(errs, runner.Invalid("directives", "needs at least one directive {service, uri, args}"))
	}
	for i, d := range c.Directives {
		field := fmt.Sprintf("directives[%d]", i)
		switch {
		case d.server() == "":
			errs = append(errs, runner.Invalid(field, `needs service (a server name, or "*" for every server)`))
		case d.Service != "" && d.Environment != "" && d.Service != d.Environment:
			errs = append(errs, runner.Invalid(field, "service %q and environment %q disagree; give one", d.Service, d.Environment))
		}
		if d.URI == "" {
			errs = append(errs, runner.Invalid(field, "needs uri, the extension's URI on the server's card"))
		}
	}
	if c.TimeoutSeconds != nil && *c.TimeoutSeconds <= 0 {
		errs = append(errs, runner.Invalid("timeout_seconds", "must be positive"))
	}
	return errors.Join(errs...)
}

// ErrUnadvertised is a directive for an extension the server's card does
// not advertise (or a server with no card).
var ErrUnadvertised = errors.New("extension not advertised")

// target is a server's card and the client its endpoints are relative to.
type target struct {
	card   *protocol.EnvCard
	client *envclient.Client
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	env, err := gwclient.ForEnv(rc, c.EnvID, c.EnvStepID)
	if err != nil {
		return err
	}
	directives, err := c.expand(env)
	if err != nil {
		return err
	}
	timeout := 30 * time.Second
	if c.TimeoutSeconds != nil {
		timeout = time.Duration(*c.TimeoutSeconds * float64(time.Second))
	}
	targets := map[string]*target{}
	for _, d := range directives {
		svc := d.server()
		t, ok := targets[svc]
		if !ok {
			t, err = c.target(ctx, env, svc, timeout)
			if err != nil {
				return err
			}
			targets[svc] = t
		}
		record := map[string]any{"step_id": rc.StepID(), "env_id": c.EnvID, "service": svc, "environment": svc, "uri": d.URI}
		var missing error
		switch {
		case t == nil:
			missing = fmt.Errorf("%w: server %q of env %s serves no env card", ErrUnadvertised, svc, c.EnvID)
			record["reason"] = "no_env_card"
		case t.card.FindExtension(d.URI) == nil:
			missing = fmt.Errorf("%w: %s is not on the card of server %q of env %s (advertised: %s)",
				ErrUnadvertised, d.URI, svc, c.EnvID, advertised(t.card))
			record["reason"] = "extension_not_advertised"
		}
		if missing != nil {
			if !c.TolerateUnadvertised {
				return missing
			}
			rc.Logger().Warn("apply_server_config: directive skipped (tolerate_unadvertised)", "service", svc, "uri", d.URI, "reason", record["reason"])
			rc.AppendMetadata("server_config_skipped", record)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		res, err := t.client.InvokeExtension(cctx, t.card, d.URI, d.Args, "")
		cancel()
		if err != nil {
			var he *envclient.HTTPError
			if errors.As(err, &he) {
				return fmt.Errorf("applying %s on server %q of env %s failed: HTTP %d: %s", d.URI, svc, c.EnvID, he.Status, he.Body)
			}
			return fmt.Errorf("applying %s on server %q of env %s failed: %w", d.URI, svc, c.EnvID, err)
		}
		var result any
		if len(res) > 0 && json.Unmarshal(res, &result) != nil {
			result = string(res)
		}
		args := d.Args
		if args == nil {
			args = map[string]any{}
		}
		record["args"], record["result"] = args, result
		rc.AppendMetadata("server_config_changes", record)
	}
	return nil
}

// expand turns "*" directives into one per server of the env.
func (c *Config) expand(env *gwclient.Env) ([]Directive, error) {
	var out []Directive
	for _, d := range c.Directives {
		if d.server() != Broadcast {
			out = append(out, d)
			continue
		}
		if len(env.Servers) == 0 {
			return nil, fmt.Errorf(`directive for every server ("*"): env %s lists no backing servers`, c.EnvID)
		}
		for _, s := range env.Servers {
			out = append(out, Directive{Service: s, URI: d.URI, Args: d.Args})
		}
	}
	return out, nil
}

// target finds server svc's card: the child card the gateway composed
// when the entry stored one (nil when the server is not among its
// children), else the child's own card read live through the proxy.
func (c *Config) target(ctx context.Context, env *gwclient.Env, svc string, timeout time.Duration) (*target, error) {
	if stored, ok := env.Entry["environment_card"].(map[string]any); ok && stored != nil {
		raw, _ := json.Marshal(stored)
		var card protocol.EnvCard
		if err := json.Unmarshal(raw, &card); err != nil {
			return nil, fmt.Errorf("env %s: stored environment card: %w", c.EnvID, err)
		}
		if card.ChildrenEnvironments != nil {
			prefix := "/svc/mcp-" + svc
			for i := range card.ChildrenEnvironments {
				child := &card.ChildrenEnvironments[i]
				if child.URL == prefix || strings.HasPrefix(child.URL, prefix+"/") {
					return &target{card: child, client: env.Gateway.Card()}, nil // sends the control token
				}
			}
			return nil, nil
		}
	}
	cl := env.Server(svc)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	card, err := cl.GetCard(cctx)
	if err != nil {
		return nil, fmt.Errorf("env %s: reading the card of server %q: %w", c.EnvID, svc, err)
	}
	return &target{card: card, client: cl}, nil
}

func advertised(card *protocol.EnvCard) string {
	var uris []string
	for _, e := range card.Capabilities.Extensions {
		uris = append(uris, e.URI)
	}
	if len(uris) == 0 {
		return "none"
	}
	return strings.Join(uris, ", ")
}
