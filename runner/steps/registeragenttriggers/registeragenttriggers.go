// Package registeragenttriggers is the register_agent_triggers step: push
// deterministic user-simulation triggers (urn:agentenv:triggers/v1) to a
// deployed agent, usually the user agent of a multi-turn prompt_agent,
// which then asks decide each turn before answering itself.
//
// The step checks what it can before sending: the agent advertises the
// extension, each trigger's when and actions use known types, and every
// env_trigger condition names an env deployed in the run and a trigger a
// register_env_triggers step registered on it (otherwise it could never
// fire). The agent validates the rest (400 → step error). The answer's
// added ids are recorded in metadata.agent_trigger_registrations[].
package registeragenttriggers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/agentenv/agentenv/internal/a2aclient"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
)

// Type is the step type name.
const Type = "register_agent_triggers"

// KeyRegistrations is the metadata list the step appends to.
const KeyRegistrations = "agent_trigger_registrations"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields (the reference's names).
type Config struct {
	AgentName string           `json:"agent_name"`
	Triggers  []map[string]any `json:"triggers"`
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser. The env ids the triggers name
// sit inside nested when conditions (triggers[].when.…of[].env_id), which
// a flat reference cannot express; they are checked against the run's
// deployed envs when the step runs instead.
func (c *Config) EntityRefs() []runner.EntityRef { return nil }

var (
	whenTypes   = []string{"step", "env_trigger", "conversational", "all", "any"}
	actionTypes = []string{"say", "end"}
)

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.AgentName == "" {
		return runner.Required("agent_name")
	}
	if c.Triggers == nil {
		return runner.Required("triggers")
	}
	if len(c.Triggers) == 0 {
		return runner.Invalid("triggers", "must not be empty")
	}
	for i, t := range c.Triggers {
		when, ok := t["when"].(map[string]any)
		if !ok {
			return runner.Invalid("triggers", "triggers[%d].when must be an object", i)
		}
		if err := checkWhen(when, fmt.Sprintf("triggers[%d].when", i), 0); err != nil {
			return runner.Invalid("triggers", "%v", err)
		}
		acts, ok := t["actions"].([]any)
		if !ok || len(acts) == 0 {
			return runner.Invalid("triggers", "triggers[%d].actions must be a non-empty list", i)
		}
		for j, a := range acts {
			m, _ := a.(map[string]any)
			typ, _ := m["type"].(string)
			if !slices.Contains(actionTypes, typ) {
				return runner.Invalid("triggers", "triggers[%d].actions[%d].type %q: want one of %v", i, j, m["type"], actionTypes)
			}
		}
	}
	return nil
}

func checkWhen(w map[string]any, where string, depth int) error {
	if depth > 16 {
		return fmt.Errorf("%s: nested too deep", where)
	}
	typ, _ := w["type"].(string)
	if !slices.Contains(whenTypes, typ) {
		return fmt.Errorf("%s.type %q: want one of %v", where, w["type"], whenTypes)
	}
	if typ == "all" || typ == "any" {
		of, ok := w["of"].([]any)
		if !ok || len(of) == 0 {
			return fmt.Errorf("%s.of must be a non-empty list", where)
		}
		for i, sub := range of {
			m, ok := sub.(map[string]any)
			if !ok {
				return fmt.Errorf("%s.of[%d] must be an object", where, i)
			}
			if err := checkWhen(m, fmt.Sprintf("%s.of[%d]", where, i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// envTriggers collects the (env_id, trigger_id) pairs of env_trigger
// conditions anywhere in a when.
func envTriggers(w map[string]any, out map[[2]string]bool) {
	if w["type"] == "env_trigger" {
		e, _ := w["env_id"].(string)
		t, _ := w["trigger_id"].(string)
		if e != "" && t != "" {
			out[[2]string{e, t}] = true
		}
	}
	of, _ := w["of"].([]any)
	for _, sub := range of {
		if m, ok := sub.(map[string]any); ok {
			envTriggers(m, out)
		}
	}
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	entry, err := rc.AgentEntry(c.AgentName)
	if err != nil {
		return fmt.Errorf("agent_name: %w", err)
	}
	card, _ := json.Marshal(entry["a2a_card"])
	params := a2aclient.ExtensionParams(card, protocol.URITriggers)
	if params == nil {
		return fmt.Errorf("agent %q does not advertise %s", c.AgentName, protocol.URITriggers)
	}
	var p struct {
		Endpoint string `json:"endpoint"`
	}
	_ = json.Unmarshal(params, &p)
	if p.Endpoint == "" {
		p.Endpoint = "/ext/triggers"
	}
	registered := map[string]map[string]bool{}
	if v, ok := rc.Metadata("env_trigger_registrations"); ok {
		l, _ := v.([]any)
		for _, r := range l {
			m, _ := r.(map[string]any)
			env, _ := m["env_id"].(string)
			added, _ := m["added"].([]any)
			if registered[env] == nil {
				registered[env] = map[string]bool{}
			}
			for _, a := range added {
				registered[env][fmt.Sprint(a)] = true
			}
		}
	}
	for _, t := range c.Triggers {
		refs := map[[2]string]bool{}
		when, _ := t["when"].(map[string]any)
		envTriggers(when, refs)
		for ref := range refs {
			if _, err := rc.EnvEntry(ref[0], ""); err != nil {
				return fmt.Errorf("triggers: trigger %v names env_trigger env_id %q: %w", t["id"], ref[0], err)
			}
			if !registered[ref[0]][ref[1]] {
				have := make([]string, 0, len(registered[ref[0]]))
				for id := range registered[ref[0]] {
					have = append(have, id)
				}
				sort.Strings(have)
				return fmt.Errorf("triggers: trigger %v names env trigger %q, which no register_env_triggers step registered on env %q (registered: %v)",
					t["id"], ref[1], ref[0], have)
			}
		}
	}
	api, _ := entry["api_url"].(string)
	if a, _ := entry["a2a_url"].(string); api == "" {
		api = a
	}
	ac := a2aclient.New(api, &http.Client{Timeout: 30 * time.Second})
	b, err := ac.ExtOK(ctx, http.MethodPost, p.Endpoint, map[string]any{"triggers": c.Triggers})
	if err != nil {
		return fmt.Errorf("agent %q trigger registration: %w", c.AgentName, err)
	}
	var out struct {
		Added []string `json:"added"`
		All   []string `json:"all"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("agent %q trigger registration: answer: %w", c.AgentName, err)
	}
	rc.AppendMetadata(KeyRegistrations, map[string]any{"step_id": rc.StepID(), "agent_name": c.AgentName,
		"added": out.Added, "all": out.All})
	rc.Logger().Info("agent triggers registered", "agent_name", c.AgentName, "added", out.Added)
	return nil
}
