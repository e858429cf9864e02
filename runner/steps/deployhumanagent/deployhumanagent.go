// Package deployhumanagent is the deploy_human_agent step: register an
// external A2A endpoint (a person behind a chat tool, a review desk) as an
// agent of the run, so peer_agents can give it to a solver and
// prompt_agent can talk to it. Nothing is deployed and nothing is torn
// down: the endpoint belongs to someone else.
//
// The card is fetched best effort (5 s): a human endpoint may serve none,
// and a peer needs only a name and a URL, so a missing card becomes a
// synthesized one. Only one human agent may be registered per run.
// Without a2a_url the run's default human endpoint is used — the config's
// [conversations] default_human_a2a_url (Services.HumanA2AURL), else
// $AGENT_ENV_HUMAN_A2A_URL — scoped to the run by /instance/<instance_id>
// so the endpoint can tell runs apart.
package deployhumanagent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
)

// Type is the step type name.
const Type = "deploy_human_agent"

// DefaultAgentName is the agent name when the step gives none.
const DefaultAgentName = "human_agent"

// EnvHumanA2AURL names the default human endpoint.
const EnvHumanA2AURL = "AGENT_ENV_HUMAN_A2A_URL"

// KeyHumanAgents is the metadata list of registered human agents.
const KeyHumanAgents = "human_agents"

// cardTimeout bounds the best-effort card fetch.
const cardTimeout = 5 * time.Second

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields (the reference's names).
type Config struct {
	AgentName string `json:"agent_name,omitempty"` // human_agent
	A2AURL    string `json:"a2a_url,omitempty"`
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser: the step names no stored
// entity (the endpoint is external).
func (c *Config) EntityRefs() []runner.EntityRef { return nil }

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.A2AURL != "" {
		if err := checkURL(c.A2AURL); err != nil {
			return runner.Invalid("a2a_url", "%v", err)
		}
	}
	return nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q must be an absolute http(s) URL", s)
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials") // they would be stored in the context
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	name := c.AgentName
	if name == "" {
		name = DefaultAgentName
	}
	if v, ok := rc.Metadata(KeyHumanAgents); ok {
		if l, _ := v.([]any); len(l) > 0 {
			return fmt.Errorf("a human agent is already registered in this run; only one is allowed per task")
		}
	}
	if _, err := rc.Agent(name); err == nil {
		return fmt.Errorf("agent_name %q: %w", name, runner.ErrDuplicateName)
	}
	u := c.A2AURL
	if u == "" {
		base, from := rc.Services().HumanA2AURL, "[conversations] default_human_a2a_url"
		if base == "" {
			base, from = os.Getenv(EnvHumanA2AURL), EnvHumanA2AURL
		}
		if base == "" {
			return fmt.Errorf("a2a_url: no human endpoint: give a2a_url or set %s ([conversations] default_human_a2a_url)", EnvHumanA2AURL)
		}
		if err := checkURL(base); err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		u = strings.TrimRight(base, "/")
		if inst, ok := rc.Metadata("instance_id"); ok && fmt.Sprint(inst) != "" {
			u += "/instance/" + url.PathEscape(fmt.Sprint(inst))
		}
	}
	u = strings.TrimRight(u, "/")
	card := fetchCard(ctx, rc, u, name)
	entry := map[string]any{"agent_name": name, "api_url": u, "a2a_url": u, "a2a_card": card,
		"sandbox_id": nil, "sandbox_type": nil, "instance_id": nil, "role": nil, "on_host": false,
		"human": true, "deploy_step_id": rc.StepID()}
	if err := rc.AddAgentEntry(entry); err != nil {
		return err
	}
	rc.AppendMetadata(KeyHumanAgents, map[string]any{"step_id": rc.StepID(), "agent_name": name, "a2a_url": u})
	rc.Logger().Info("human agent registered", "agent_name", name, "a2a_url", u, "card_name", card["name"])
	return nil
}

// fetchCard returns the endpoint's card, or a synthesized one when it
// serves none.
func fetchCard(ctx context.Context, rc *runner.RunContext, u, name string) map[string]any {
	ctx, cancel := context.WithTimeout(ctx, cardTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+protocol.LegacyAgentCardPath, nil)
	if err == nil {
		var resp *http.Response
		resp, err = http.DefaultClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
			resp.Body.Close()
			var card map[string]any
			if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &card) == nil && card != nil {
				return card
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
	}
	rc.Logger().Warn("human agent card unavailable; using a synthesized card", "a2a_url", u, "error", err)
	return map[string]any{"name": name, "description": "A human operator available to answer questions",
		"capabilities": map[string]any{}, "default_input_modes": []any{"text"}, "default_output_modes": []any{"text"}}
}
