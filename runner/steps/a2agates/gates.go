package a2agates

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentenv/agentenv/internal/a2aclient"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
)

// Infos registers the agent gates that probe an agent themselves (all
// with the Gate fields). verify_a2a_install and verify_a2a_snapshot,
// which record what earlier steps exercised, are RecorderInfos.
func Infos() []runner.StepInfo {
	return []runner.StepInfo{
		info("verify_a2a_agent_card", checkCard),
		info("verify_a2a_modalities", checkModalities),
		info("verify_a2a_core_protocol", checkCore),
		info("verify_a2a_agent_config_identity", checkIdentity),
		info("verify_a2a_role", checkRole),
		info("verify_a2a_system_prompt", checkSystemPrompt),
		info("verify_a2a_agent_mcp", checkMCP),
		info("verify_a2a_peer_agents", checkPeers),
		info("verify_a2a_trajectory", checkTrajectory),
		info("verify_a2a_skill_config", checkSkillConfig),
	}
}

// info registers type typ; its gate key is the type without "verify_".
func info(typ string, c check) runner.StepInfo {
	gate := typ[len("verify_"):]
	return runner.StepInfo{Type: typ, New: func() runner.Step { return &Gate{typ: typ, gate: gate, run: c} }}
}

// cardOf decodes the card's fields the gates read.
type cardFields struct {
	Name               string           `json:"name"`
	Description        *string          `json:"description"`
	Version            string           `json:"version"`
	URL                string           `json:"url"`
	ProtocolVersion    string           `json:"protocolVersion"`
	PreferredTransport string           `json:"preferredTransport"`
	DefaultInputModes  []string         `json:"defaultInputModes"`
	DefaultOutputModes []string         `json:"defaultOutputModes"`
	Skills             *json.RawMessage `json:"skills"`
	Capabilities       *struct {
		PushNotifications      bool `json:"pushNotifications"`
		StateTransitionHistory bool `json:"stateTransitionHistory"`
	} `json:"capabilities"`
}

func fields(a *agent) (cardFields, error) {
	var c cardFields
	err := json.Unmarshal(a.card, &c)
	return c, err
}

// checkCard: the card's required members are present and well formed.
func checkCard(_ context.Context, a *agent) (map[string]any, []string, string) {
	c, err := fields(a)
	if err != nil {
		return nil, []string{fmt.Sprintf("agent card is not a JSON object: %v", err)}, ""
	}
	var p []string
	for k, v := range map[string]string{"name": c.Name, "version": c.Version, "url": c.URL, "protocolVersion": c.ProtocolVersion,
		"preferredTransport": c.PreferredTransport} {
		if v == "" {
			p = append(p, fmt.Sprintf("card field %s is missing or empty", k))
		}
	}
	if c.Description == nil {
		p = append(p, "card field description is missing")
	}
	if c.Skills == nil {
		p = append(p, "card field skills is missing (an empty list is fine)")
	}
	if c.Capabilities == nil {
		p = append(p, "card field capabilities is missing")
	} else if c.Capabilities.PushNotifications || c.Capabilities.StateTransitionHistory {
		p = append(p, "capabilities.pushNotifications and stateTransitionHistory must be false")
	}
	slices.Sort(p)
	return map[string]any{"card": json.RawMessage(a.card)}, p, ""
}

// checkModalities: the default modes are lists of media types, and text
// goes both ways (the runner prompts and reads text).
func checkModalities(_ context.Context, a *agent) (map[string]any, []string, string) {
	c, err := fields(a)
	if err != nil {
		return nil, []string{fmt.Sprintf("agent card is not a JSON object: %v", err)}, ""
	}
	var p []string
	for _, m := range []struct {
		name  string
		modes []string
	}{{"defaultInputModes", c.DefaultInputModes}, {"defaultOutputModes", c.DefaultOutputModes}} {
		switch {
		case len(m.modes) == 0:
			p = append(p, fmt.Sprintf("card field %s is missing or empty", m.name))
		case !slices.Contains(m.modes, "text") && !slices.Contains(m.modes, "text/plain"):
			p = append(p, fmt.Sprintf("card field %s %v lacks text", m.name, m.modes))
		}
	}
	return map[string]any{"input_modes": c.DefaultInputModes, "output_modes": c.DefaultOutputModes}, p, ""
}

// probeTask sends one message and waits for its task to end.
func probeTask(ctx context.Context, a *agent) (*a2aclient.Task, error) {
	t, err := a.c.Send(ctx, a2aclient.NewID(), []a2aclient.Part{{Kind: "text", Text: "ping (release gate probe)"}})
	if err != nil {
		return nil, fmt.Errorf("message/send: %w", err)
	}
	if t.Kind == "message" || a2aclient.Terminal(t.Status.State) {
		return t, nil
	}
	done, err := a.c.Poll(ctx, t.ID, 200*time.Millisecond, a.timeout)
	if err != nil {
		return t, fmt.Errorf("tasks/get %s: %w", t.ID, err)
	}
	return done, nil
}

// checkCore: message/send starts a task that tasks/get follows to an end;
// an unknown task id and an unknown method are JSON-RPC errors.
func checkCore(ctx context.Context, a *agent) (map[string]any, []string, string) {
	var p []string
	d := map[string]any{}
	t, err := probeTask(ctx, a)
	if err != nil {
		p = append(p, err.Error())
	} else {
		// Any end state shows the protocol works: an agent may refuse
		// a probe it has no instructions for.
		d["task_state"] = t.Status.State
	}
	var rpc *a2aclient.RPCError
	if _, err := a.c.Get(ctx, "no-such-task-"+a2aclient.NewID()); !errors.As(err, &rpc) {
		p = append(p, fmt.Sprintf("tasks/get of an unknown task id: want a JSON-RPC error, got %v", err))
	}
	if err := a.c.Call(ctx, "no/such/method", map[string]any{}, nil); !errors.As(err, &rpc) {
		p = append(p, fmt.Sprintf("an unknown method: want a JSON-RPC error, got %v", err))
	}
	return d, p, ""
}

// configGet reads agent-config (GET): the explicitly set values.
func configGet(ctx context.Context, a *agent) (map[string]any, error) {
	b, err := a.c.ExtOK(ctx, http.MethodGet, "/ext/agent-config", nil)
	if err != nil {
		return nil, err
	}
	var out struct {
		Config map[string]any `json:"config"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Config == nil {
		return nil, fmt.Errorf("GET /ext/agent-config: want {\"config\":{...}}, got %.200s", b)
	}
	return out.Config, nil
}

// roundTrip sets field to v through agent-config, reads it back, and
// restores the value read before (null when it was unset).
func roundTrip(ctx context.Context, a *agent, field string, v any) []string {
	if !slices.Contains(a2aclient.Supported(a.card), field) {
		return []string{fmt.Sprintf("agent-config does not list %s in set.request.supported", field)}
	}
	before, err := configGet(ctx, a)
	if err != nil {
		return []string{fmt.Sprintf("agent-config get: %v", err)}
	}
	if _, err := a.c.ExtOK(ctx, http.MethodPost, "/ext/agent-config", map[string]any{field: v}); err != nil {
		return []string{fmt.Sprintf("agent-config set %s: %v", field, err)}
	}
	defer func() {
		_, _ = a.c.ExtOK(ctx, http.MethodPost, "/ext/agent-config", map[string]any{field: before[field]})
	}()
	after, err := configGet(ctx, a)
	if err != nil {
		return []string{fmt.Sprintf("agent-config get after set: %v", err)}
	}
	if got := after[field]; got != v {
		return []string{fmt.Sprintf("agent-config %s reads back %v after setting %v", field, got, v)}
	}
	return nil
}

// checkIdentity: agent-config is advertised, supports name and
// description, and setting the name updates the live card (the name is
// restored afterwards).
func checkIdentity(ctx context.Context, a *agent) (map[string]any, []string, string) {
	if !a2aclient.Advertises(a.card, protocol.URIAgentConfig) {
		return nil, []string{"the card does not advertise " + protocol.URIAgentConfig}, ""
	}
	sup := a2aclient.Supported(a.card)
	var p []string
	for _, f := range []string{"name", "description"} {
		if !slices.Contains(sup, f) {
			p = append(p, fmt.Sprintf("agent-config does not list %s in set.request.supported", f))
		}
	}
	if len(p) > 0 {
		return map[string]any{"supported": sup}, p, ""
	}
	c, _ := fields(a)
	probe := c.Name + "-gate-probe"
	if _, err := a.c.ExtOK(ctx, http.MethodPost, "/ext/agent-config", map[string]any{"name": probe}); err != nil {
		return nil, []string{fmt.Sprintf("agent-config set name: %v", err)}, ""
	}
	defer func() { _, _ = a.c.ExtOK(ctx, http.MethodPost, "/ext/agent-config", map[string]any{"name": c.Name}) }()
	card, err := a.c.Card(ctx)
	var now cardFields
	if err == nil {
		err = json.Unmarshal(card, &now)
	}
	if err != nil {
		p = append(p, fmt.Sprintf("agent card after set name: %v", err))
	} else if now.Name != probe {
		p = append(p, fmt.Sprintf("agent-config set name did not update the live card (name %q)", now.Name))
	}
	return map[string]any{"supported": sup}, p, ""
}

// checkRole: agent-config supports role, has get, and round-trips it.
func checkRole(ctx context.Context, a *agent) (map[string]any, []string, string) {
	if !a2aclient.Advertises(a.card, protocol.URIAgentConfig) {
		return nil, []string{"the card does not advertise " + protocol.URIAgentConfig}, ""
	}
	return nil, roundTrip(ctx, a, "role", "gate-probe-role"), ""
}

// checkSystemPrompt: an agent whose agent-config supports system_prompt
// round-trips it; one that does not is skipped (the runner then sends
// none).
func checkSystemPrompt(ctx context.Context, a *agent) (map[string]any, []string, string) {
	if !slices.Contains(a2aclient.Supported(a.card), "system_prompt") {
		return nil, nil, "agent-config does not support system_prompt"
	}
	return nil, roundTrip(ctx, a, "system_prompt", "You are checked by a release gate."), ""
}

// checkMCP: mcp-config is advertised and lists the registered servers.
func checkMCP(ctx context.Context, a *agent) (map[string]any, []string, string) {
	if !a2aclient.Advertises(a.card, protocol.URIMCPConfig) {
		return nil, []string{"the card does not advertise " + protocol.URIMCPConfig + " (the runner binds envs with it)"}, ""
	}
	b, err := a.c.ExtOK(ctx, http.MethodGet, "/ext/mcp-config", nil)
	if err != nil {
		return nil, []string{fmt.Sprintf("mcp-config list: %v", err)}, ""
	}
	var out struct {
		Servers map[string]json.RawMessage `json:"mcp_servers"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Servers == nil {
		return nil, []string{fmt.Sprintf("mcp-config list: want {\"mcp_servers\":{...}}, got %.200s", b)}, ""
	}
	names := make([]string, 0, len(out.Servers))
	for n := range out.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return map[string]any{"mcp_servers": names}, nil, ""
}

// checkPeers: an agent advertising peer-agents lists its peers; one that
// does not is skipped.
func checkPeers(ctx context.Context, a *agent) (map[string]any, []string, string) {
	if !a2aclient.Advertises(a.card, protocol.URIPeerAgents) {
		return nil, nil, "the card does not advertise " + protocol.URIPeerAgents
	}
	b, err := a.c.ExtOK(ctx, http.MethodGet, "/ext/peer-agents", nil)
	if err != nil {
		return nil, []string{fmt.Sprintf("peer-agents list: %v", err)}, ""
	}
	var out struct {
		Peers []json.RawMessage `json:"peers"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Peers == nil {
		return nil, []string{fmt.Sprintf("peer-agents list: want {\"peers\":[...]}, got %.200s", b)}, ""
	}
	return map[string]any{"peers": len(out.Peers)}, nil, ""
}

// checkTrajectory: the trajectory extension is advertised and, after a
// probe task, answers a get by task id with a trajectory.
func checkTrajectory(ctx context.Context, a *agent) (map[string]any, []string, string) {
	if !a2aclient.Advertises(a.card, protocol.URITrajectory) {
		return nil, []string{"the card does not advertise " + protocol.URITrajectory}, ""
	}
	t, err := probeTask(ctx, a)
	if err != nil {
		return nil, []string{err.Error()}, ""
	}
	if t.Kind == "message" {
		return nil, nil, "message/send answered with a message, not a task: no task trajectory to read"
	}
	d := map[string]any{"task_id": t.ID, "task_state": t.Status.State}
	b, err := a.c.ExtOK(ctx, http.MethodPost, "/ext/trajectory", map[string]any{"task_id": t.ID})
	var he *a2aclient.HTTPError
	if errors.As(err, &he) && he.Status == http.StatusNotFound && t.Status.State != "completed" {
		// 404 is the contract's answer for a task that left no
		// trajectory, which a refused probe may not.
		d["trajectory_bytes"] = 0
		return d, nil, ""
	}
	if err != nil {
		return d, []string{fmt.Sprintf("trajectory get for a %s task: %v", t.Status.State, err)}, ""
	}
	var out struct {
		Trajectory json.RawMessage `json:"trajectory"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Trajectory) == 0 {
		return d, []string{fmt.Sprintf("trajectory get: want {\"trajectory\":...}, got %.200s", b)}, ""
	}
	d["trajectory_bytes"] = len(out.Trajectory)
	return d, nil, ""
}

// checkSkillConfig: an agent advertising skill-config installs an inline
// skill (a probe with a fresh name: a validated agent is a throwaway
// deployment), lists it, shows it on the live card and refuses the same
// name again with 409. One that does not advertise it is skipped.
func checkSkillConfig(ctx context.Context, a *agent) (map[string]any, []string, string) {
	if !a2aclient.Advertises(a.card, protocol.URISkillConfig) {
		return nil, nil, "the card does not advertise " + protocol.URISkillConfig
	}
	name := "gate-probe-" + a2aclient.NewID()[:8]
	skill := map[string]any{"name": name, "description": "Release gate probe skill.",
		"skill_md": "---\nname: " + name + "\ndescription: Release gate probe skill.\n---\nNothing to do.\n"}
	d := map[string]any{"probe_skill": name}
	b, err := a.c.ExtOK(ctx, http.MethodPost, "/ext/skill-config", skill)
	if err != nil {
		return d, []string{fmt.Sprintf("skill-config add: %v", err)}, ""
	}
	var added struct {
		Name string `json:"name"`
	}
	var p []string
	if json.Unmarshal(b, &added) != nil || added.Name != name {
		p = append(p, fmt.Sprintf("skill-config add: want {\"name\":%q}, got %.200s", name, b))
	}
	b, err = a.c.ExtOK(ctx, http.MethodGet, "/ext/skill-config", nil)
	var list struct {
		Skills map[string]json.RawMessage `json:"skills"`
	}
	switch {
	case err != nil:
		p = append(p, fmt.Sprintf("skill-config list: %v", err))
	case json.Unmarshal(b, &list) != nil || list.Skills == nil:
		p = append(p, fmt.Sprintf("skill-config list: want {\"skills\":{...}}, got %.200s", b))
	case list.Skills[name] == nil:
		p = append(p, "skill-config list lacks the skill just added")
	}
	if card, err := a.c.Card(ctx); err == nil && !strings.Contains(string(card), `"skill-`+name+`"`) {
		p = append(p, fmt.Sprintf("the live card lacks skill-%s after the add", name))
	}
	if st, _, err := a.c.Ext(ctx, http.MethodPost, "/ext/skill-config", skill); err != nil || st != http.StatusConflict {
		p = append(p, fmt.Sprintf("skill-config add of a duplicate name: want HTTP 409, got %d (%v)", st, err))
	}
	return d, p, ""
}
