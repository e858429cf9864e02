package envdeploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/agentenv/agentenv/registry"
)

// AgentDeployRequest deploys one agent.
type AgentDeployRequest struct {
	Agent registry.Ref
	// EnvInstances are the env instances the agent uses; it joins their
	// groups and must run on the same sandbox type.
	EnvInstances []string
	Sandbox      string // "" = AgentSandbox (or the envs' sandbox)
	TTL          time.Duration
	EnvVars      map[string]string
	// ModelBaseURL and ModelAPIKey become LITELLM_BASE_URL and
	// LITELLM_API_KEY (the URL rewritten to be reachable from the agent).
	ModelBaseURL, ModelAPIKey string
}

// AgentInstance is the a2a_agent_instances record.
type AgentInstance struct {
	InstanceID     string   `json:"instance_id"`
	AgentID        string   `json:"agent_id"`
	AgentVersion   int      `json:"agent_version"`
	AgentName      string   `json:"agent_name"`
	Status         string   `json:"status"`
	APIURL         string   `json:"api_url"`
	A2AURL         string   `json:"a2a_url"`
	SandboxID      string   `json:"sandbox_id"`
	SandboxType    string   `json:"sandbox_type"`
	EnvInstanceIDs []string `json:"env_instance_ids"`
	// EnvMCPURLs maps env instance ids to the MCP URL the agent uses for
	// each (the env's network alias on Docker).
	EnvMCPURLs    map[string]string `json:"env_mcp_urls"`
	AgentCard     json.RawMessage   `json:"agent_card,omitempty"`
	CreatedAtUTC  string            `json:"created_at_utc"`
	ExpiresAtUTC  string            `json:"expires_at_utc"`
	TornDownAtUTC string            `json:"torn_down_at_utc,omitempty"`
}

// AgentCardPath is where an A2A agent serves its card.
const AgentCardPath = "/.well-known/agent.json"

// DeployAgent starts an agent: one workload with A2A_PORT,
// in its own group and joined to the groups of its envs, published on
// 127.0.0.1; ready when its card answers 200 with a body.
func (d *Deployer) DeployAgent(ctx context.Context, req AgentDeployRequest) (inst *AgentInstance, err error) {
	a, err := d.Stores.GetAgent(ctx, req.Agent)
	if err != nil {
		return nil, err
	}
	ttl := req.TTL
	if ttl == 0 {
		ttl = 7200 * time.Second
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return nil, &registry.InvalidError{Field: "ttl_seconds", Value: strconv.Itoa(int(ttl.Seconds())), Reason: "must be between 60 and 1209600"}
	}
	var envs []*EnvInstance
	for _, id := range req.EnvInstances {
		ei, err := d.GetInstance(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("env instance %s: %w", id, err)
		}
		if ei.Status != StatusDeployed {
			return nil, fmt.Errorf("env instance %s is %s", id, ei.Status)
		}
		envs = append(envs, ei)
	}
	spec := req.Sandbox
	if spec == "" && len(envs) > 0 {
		spec = envs[0].SandboxType
	}
	b, err := d.pick(ctx, spec, d.AgentSandbox)
	if err != nil {
		return nil, err
	}
	var join []string
	mcpURLs := map[string]string{}
	for _, ei := range envs {
		if ei.SandboxType != b.Type() {
			return nil, fmt.Errorf("env instance %s runs on %s; an agent using it must run there too, not on %s", ei.InstanceID, ei.SandboxType, b.Type())
		}
		join = append(join, ei.SandboxID)
		mcpURLs[ei.InstanceID] = ei.InternalMCPURL
	}
	ng, err := d.newGroup(ctx, b, a.ID, ttl)
	if err != nil {
		return nil, err
	}
	defer removePartial(ctx, ng.g, &err)
	id, now, expires, g := ng.id, ng.created, ng.expires, ng.g
	env := map[string]string{"A2A_HOST": "0.0.0.0"}
	maps.Copy(env, a.EnvVars)
	maps.Copy(env, req.EnvVars)
	if req.ModelBaseURL != "" {
		env["LITELLM_BASE_URL"] = b.ReachableURL(req.ModelBaseURL)
	}
	if req.ModelAPIKey != "" {
		env["LITELLM_API_KEY"] = req.ModelAPIKey
	}
	src := d.Stores.source(ctx, a.DockerImageArtifactRef, a.BinaryArtifactRef, a.ImageName,
		fmt.Sprintf("a2a agent %s v%d", a.ID, a.Version), "agent-env a2a-agent put --id "+a.ID)
	ep, err := g.Run(ctx, Workload{Name: "agent", Role: "agent", Source: src, Port: A2APort, PortEnv: "A2A_PORT",
		Publish: true, Env: env, Join: join})
	if err != nil {
		return nil, err
	}
	card, err := d.waitAgent(ctx, g, ep.Host+AgentCardPath)
	if err != nil {
		return nil, err
	}
	var c struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(card, &c)
	inst = &AgentInstance{InstanceID: id, AgentID: a.ID, AgentVersion: a.Version, AgentName: c.Name, Status: StatusDeployed,
		APIURL: ep.Host, A2AURL: ep.Host + "/", SandboxID: g.ID(), SandboxType: b.Type(), EnvInstanceIDs: req.EnvInstances,
		EnvMCPURLs: mcpURLs, AgentCard: card, CreatedAtUTC: now.Format(time.RFC3339), ExpiresAtUTC: expires.Format(time.RFC3339)}
	if inst.EnvInstanceIDs == nil {
		inst.EnvInstanceIDs = []string{}
	}
	body, _ := json.Marshal(inst)
	if _, err := d.Stores.Docs.InsertRecord(ctx, registry.A2AAgentInstances, id, body); err != nil {
		return nil, fmt.Errorf("record agent instance: %w", err)
	}
	return inst, nil
}

func (d *Deployer) waitAgent(ctx context.Context, g Group, u string) (json.RawMessage, error) {
	timeout := d.ReadyTimeout
	if timeout == 0 {
		timeout = 300 * time.Second
	}
	ctx2, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 10 * time.Millisecond
	last := ""
	const what = "agent"
	for {
		req, _ := http.NewRequestWithContext(ctx2, http.MethodGet, u, nil)
		resp, err := d.httpClient().Do(req)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && len(b) > 0 {
				return b, nil
			}
			last = "status " + strconv.Itoa(resp.StatusCode)
		} else {
			last = err.Error()
		}
		if ew, ok := g.(ExitWatcher); ok {
			if name, dead := ew.Exited(ctx2); dead {
				return nil, fmt.Errorf("%s exited before the %s was ready; its log tail:\n%s", name, what, g.Logs(context.WithoutCancel(ctx), name, 15))
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx2.Done():
			t.Stop()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("agent not ready after %s at %s (%s); agent log tail:\n%s", timeout, u, last,
				g.Logs(context.WithoutCancel(ctx), "agent", 15))
		case <-t.C:
		}
		if delay < 100*time.Millisecond {
			delay *= 2
		}
	}
}

// GetAgentInstance reads an agent instance record.
func (d *Deployer) GetAgentInstance(ctx context.Context, id string) (*AgentInstance, error) {
	r, _, err := d.record(ctx, registry.A2AAgentInstances, id)
	if err != nil {
		return nil, err
	}
	var inst AgentInstance
	return &inst, r.Decode(&inst)
}

// TeardownAgent removes an agent instance; idempotent.
func (d *Deployer) TeardownAgent(ctx context.Context, id string) error {
	inst, err := d.GetAgentInstance(ctx, id)
	if err != nil {
		return err
	}
	if err := d.terminate(ctx, inst.SandboxType, inst.SandboxID); err != nil {
		return err
	}
	return d.markTornDown(ctx, registry.A2AAgentInstances, id)
}

// PruneOptions tunes Prune; nil means this store only.
type PruneOptions struct {
	// AllStores prunes the orphans of every store on the engine, not only
	// those labelled with the deployer's StoreID.
	AllStores bool
	// Providers limits pruning to the backends of these names (`sandbox
	// prune --provider kubernetes`); empty prunes every backend.
	Providers []string
}

// PruneReport is what Prune removed, kept (with why) and skipped.
type PruneReport struct {
	Removed []string
	// Kept lists each kept sandbox once: "<sandbox id> (instance <id>): <why>".
	Kept []string
	// Skipped names the backends that did not answer, with their error.
	Skipped []string
}

// Prune removes, on every backend that answers, the labelled resources
// that PruneRule finds orphaned: only this store's (StoreID) unless
// AllStores. Backends that do not answer are skipped and reported.
func (d *Deployer) Prune(ctx context.Context, o *PruneOptions) (*PruneReport, error) {
	var opts PruneOptions
	if o != nil {
		opts = *o
	}
	live := func(id string) bool {
		for _, c := range []registry.Collection{registry.EnvInstances, registry.A2AAgentInstances} {
			r, _, err := d.record(ctx, c, id)
			if err != nil {
				continue
			}
			var st struct {
				Status string `json:"status"`
			}
			if r.Decode(&st) == nil && st.Status == StatusDeployed {
				return true
			}
		}
		return false
	}
	rule := PruneRule{Now: d.now(), Live: live, StoreID: d.StoreID, AllStores: opts.AllStores}
	rep := &PruneReport{}
	var mu sync.Mutex // a backend may decide concurrently
	kept := map[string]bool{}
	decide := func(l map[string]string) bool {
		orphan, why := rule.Decide(l)
		if !orphan {
			key := l[LabelSandbox]
			if key == "" {
				key = l[LabelInstance]
			}
			mu.Lock()
			if !kept[key] {
				kept[key] = true
				rep.Kept = append(rep.Kept, key+" (instance "+l[LabelInstance]+"): "+why)
			}
			mu.Unlock()
		}
		return orphan
	}
	var errs []error
	done := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(d.Backends)) {
		b := d.Backends[name]
		if len(opts.Providers) > 0 && !slices.Contains(opts.Providers, name) {
			continue
		}
		if done[b.Type()] {
			continue // one backend under several names ("local" and "docker")
		}
		done[b.Type()] = true
		if err := b.Check(ctx); err != nil {
			rep.Skipped = append(rep.Skipped, name+": "+err.Error())
			continue
		}
		r, err := b.Prune(ctx, decide)
		rep.Removed = append(rep.Removed, r...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	sort.Strings(rep.Kept)
	if len(errs) > 0 {
		return rep, fmt.Errorf("prune: %w", errors.Join(errs...))
	}
	return rep, nil
}

// RecordPlacedAgent records an agent started inside a sandbox the run
// already owns (deploy_agent with sandbox_name, install_agent) in the
// agent-instance store like a deployed one, so `a2a-agent instances` and
// the explorer list it. inst names the sandbox it runs in; its
// InstanceID, Status and times are set here. Nothing is terminated
// through the record: the agent ends with its sandbox, after which
// MarkPlacedAgentEnded closes the record.
func (d *Deployer) RecordPlacedAgent(ctx context.Context, inst *AgentInstance, ttl time.Duration) error {
	if ttl == 0 {
		ttl = 7200 * time.Second
	}
	now := d.now()
	inst.InstanceID = registry.NewInstanceID(inst.AgentID)
	inst.Status = StatusDeployed
	inst.CreatedAtUTC, inst.ExpiresAtUTC = now.Format(time.RFC3339), now.Add(ttl).Format(time.RFC3339)
	if inst.EnvInstanceIDs == nil {
		inst.EnvInstanceIDs = []string{}
	}
	body, err := json.Marshal(inst)
	if err != nil {
		return err
	}
	if _, err := d.Stores.Docs.InsertRecord(ctx, registry.A2AAgentInstances, inst.InstanceID, body); err != nil {
		return fmt.Errorf("record agent instance: %w", err)
	}
	return nil
}

// MarkPlacedAgentEnded marks a placed agent's record torn down without
// terminating anything (its sandbox's teardown ended it); idempotent.
func (d *Deployer) MarkPlacedAgentEnded(ctx context.Context, id string) error {
	return d.markTornDown(ctx, registry.A2AAgentInstances, id)
}
